"""The staging area the expire/compaction job leaves for the server, and its check.

The job never touches a live partition's files. It writes, per partition::

    <log.dirs>/__consumer_offsets-<p>/.staging-<id>/
        <base>.log/.index/.timeindex   a cleaned copy of each closed segment, same base
                                      offset, records keep their offsets
        tombstones.batch               v2 batches of expiry tombstones (offsets from 0;
                                      the server's append assigns real ones)
        manifest.json                  written last (temp + fsync + rename)

The server (not this module) validates the manifest against the live log, swaps
the segments at a safe point and re-checks each expiry tombstone against live state
(``decided_on_offset``: the offset of the record the decision was based on; if the
key has a newer record the tombstone must be dropped). ``validate_staging`` is the
check it calls first: an empty list means the staged files still describe exactly
the live closed segments they replace. The format is documented in
docs/SPARK_JOBS.md.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from crc32c import crc32c

from .batch import build_batch, ensure_valid, iter_batches
from .errors import RecordError
from .records import GroupMetadataKey, Key, OffsetCommitKey, encode_key

FORMAT = "kgc-compaction-staging"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
STAGING_PREFIX = ".staging-"
TOMBSTONES_FILE = "tombstones.batch"
TOMBSTONES_PER_BATCH = 500
_DIR_RE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")

Manifest = dict[str, Any]  # a staging area's manifest.json, as json.load gives it


def fingerprint(path: str, data: bytes | None = None) -> dict:
    """size, mtime_ns and CRC-32C of a file (``data``: its bytes, if already read)."""
    st = os.stat(path)
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "crc32c": crc32c(data)}


def live_segments(partition_dir: str) -> dict[int, str]:
    """base offset -> path of every ``<20 digits>.log`` in the partition directory."""
    out = {}
    for name in os.listdir(partition_dir):
        if name.endswith(".log") and len(name) == 24 and name[:20].isdigit():
            out[int(name[:20])] = os.path.join(partition_dir, name)
    return out


def tombstone_batches(tombstones: list[dict], timestamp_ms: int) -> bytes:
    """Encode expiry tombstones (manifest entries) as uncompressed v2 batches."""
    out = bytearray()
    records = []
    for t in tombstones:
        key: Key
        if t["type"] == "offset_commit":
            key = OffsetCommitKey(t["group"], t["topic"], t["partition"])
        else:
            key = GroupMetadataKey(t["group"])
        records.append((encode_key(key), None, timestamp_ms))
    for i in range(0, len(records), TOMBSTONES_PER_BATCH):
        out += build_batch(records[i:i + TOMBSTONES_PER_BATCH])
    return bytes(out)


def write_json_atomic(path: str, obj: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def list_staging(partition_dir: str) -> list[tuple[str, Manifest]]:
    """(staging dir, manifest) of every complete staging area of a partition."""
    found = []
    try:
        names = sorted(os.listdir(partition_dir))
    except FileNotFoundError:
        return []
    for name in names:
        path = os.path.join(partition_dir, name)
        if name.startswith(STAGING_PREFIX) and os.path.isfile(os.path.join(path, MANIFEST)):
            with open(os.path.join(path, MANIFEST)) as f:
                found.append((path, json.load(f)))
    return found


def _check_file(path: str, meta: dict, what: str, problems: list[str], deep: bool) -> bytes | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        problems.append(f"{what} {path} is missing")
        return None
    if st.st_size != meta["size"]:
        problems.append(f"{what} {path} has {st.st_size} bytes, manifest says {meta['size']}")
        return None
    if "mtime_ns" in meta and st.st_mtime_ns != meta["mtime_ns"]:
        problems.append(f"{what} {path} was modified (mtime {st.st_mtime_ns}, manifest {meta['mtime_ns']})")
    if not deep:
        return None
    with open(path, "rb") as f:
        data = f.read()
    if crc32c(data) != meta["crc32c"]:
        problems.append(f"{what} {path}: CRC-32C differs from the manifest")
        return None
    return data


def validate_staging(partition_dir: str, manifest: Manifest, deep: bool = True) -> list[str]:
    """Problems that forbid applying this staging area to the live partition (empty
    list: safe to swap). ``deep`` also checksums the live and staged files and walks
    the staged batches; without it only sizes and mtimes are compared."""
    problems: list[str] = []
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        return [f"unknown manifest format {manifest.get('format')!r} v{manifest.get('format_version')}"]
    match = _DIR_RE.match(os.path.basename(os.path.normpath(partition_dir)))
    if match is None or int(match["partition"]) != manifest["partition"]:
        problems.append(f"{partition_dir} is not partition {manifest['partition']}")
    staging = os.path.join(partition_dir, manifest["id"])
    if not os.path.isdir(staging):
        return problems + [f"staging directory {staging} is missing"]
    try:
        live = live_segments(partition_dir)
    except FileNotFoundError:
        return problems + [f"partition directory {partition_dir} is missing"]
    upper = manifest["upper_bound"]
    replaced = {s["base_offset"] for s in manifest["segments"]}
    below = {b for b in live if b < upper}
    if below - replaced:
        problems.append(f"live segments {sorted(below - replaced)} below the cleaning bound {upper} "
                        "are not covered by this staging area")
    if not any(b >= upper for b in live):
        problems.append(f"no live segment at or after the cleaning bound {upper}: "
                        "a replaced segment would now be the active one (log truncated?)")
    active = manifest.get("active_segment")
    if active and active["base_offset"] in live:
        size = os.path.getsize(live[active["base_offset"]])
        if size < active["size"]:
            problems.append(f"segment {active['base_offset']} shrank from {active['size']} to {size} bytes "
                            "(log truncated after the job read it)")
    for seg in manifest["segments"]:
        base = seg["base_offset"]
        if base not in live:
            problems.append(f"replaced segment {base} no longer exists")
        else:
            _check_file(live[base], seg["original"], "live segment", problems, deep)
        data = _check_file(os.path.join(staging, seg["cleaned"]["file"]),
                           seg["cleaned"], "staged segment", problems, deep)
        if data is not None:
            _check_batches(data, base, seg["original"]["last_offset"], seg["cleaned"]["file"], problems)
    tomb = manifest.get("tombstones")
    if tomb and tomb["count"]:
        _check_file(os.path.join(staging, tomb["file"]), tomb, "tombstones file", problems, deep)
    return problems


def _check_batches(data: bytes, base: int, last_offset: int, name: str, problems: list[str]) -> None:
    end, previous = 0, base - 1
    try:
        for batch in iter_batches(data):
            ensure_valid(batch)
            if batch.base_offset <= previous or batch.last_offset > last_offset:
                problems.append(f"staged {name}: batch offsets [{batch.base_offset}, {batch.last_offset}] "
                                f"out of order or outside [{base}, {last_offset}]")
                return
            previous, end = batch.last_offset, batch.position + batch.size
    except RecordError as exc:
        problems.append(f"staged {name}: bad batch at position {end}: {exc}")
        return
    if end != len(data):
        problems.append(f"staged {name}: partial batch at position {end}")
