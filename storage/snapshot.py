"""Per-partition state snapshots of __consumer_offsets, loadable without Spark or a JVM.

A snapshot is the replayed state of one offsets partition (every live group and
every live offset, tombstoned keys gone) plus the log offset it covers: the server
loads it, then replays its log from ``covers_log_offset`` (or does not replay the
log at all when that is None: a snapshot made from an export, or from logs of a
different partition layout, covers no offset of this partition's log).

Layout, under a snapshot root (the bulk-load ``--output``)::

    __consumer_offsets-<p>/snapshot-<created ms>-<covers|none>-<id>/
        groups.parquet    one row per live group
        offsets.parquet   one row per live offset, sorted by group, topic, partition
        consumer_groups.parquet   (only when there are some) one row per live KIP-848
                          consumer-group record: group, key, value (Kafka's record bytes)
        MANIFEST.json     written last; a directory without it is ignored

It is written into ``.tmp-snapshot-...`` (files fsync'ed, manifest last), then
renamed into place and the parent directory fsync'ed, so a reader never sees a
half-written snapshot. The manifest carries each file's size and CRC-32C.

groups.parquet: group, has_metadata (False = a "simple" group that exists only
through its offsets: Kafka's EMPTY classic group with no protocol type and
generation 0), state ("Empty"/"Stable", as Kafka loads it), protocol_type,
generation, protocol, leader, current_state_timestamp, member_count, and value (the
GroupMetadataValue in Kafka's record encoding, v3 unless it had to be v4; null for a
simple group). offsets.parquet: group, topic, partition, offset, leader_epoch,
metadata, commit_timestamp, expire_timestamp (-1 = none). consumer_groups.parquet: the latest
record of each consumer-group key (storage.consumer_group_records), not decoded: the loader
replays them between the groups and the offsets (manifest "consumer_group_records" counts them).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from crc32c import crc32c

from .records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_value,
    encode_value,
)

FORMAT = "kgc-offsets-snapshot"
FORMAT_VERSION = 1
MANIFEST = "MANIFEST.json"
GROUPS_FILE = "groups.parquet"
OFFSETS_FILE = "offsets.parquet"
CONSUMER_GROUPS_FILE = "consumer_groups.parquet"
PREFIX = "snapshot-"
TMP_PREFIX = ".tmp-snapshot-"

GROUPS_SCHEMA = pa.schema([
    ("group", pa.string()), ("has_metadata", pa.bool_()), ("state", pa.string()),
    ("protocol_type", pa.string()), ("generation", pa.int32()), ("protocol", pa.string()),
    ("leader", pa.string()), ("current_state_timestamp", pa.int64()),
    ("member_count", pa.int32()), ("value", pa.binary()),
])
OFFSETS_SCHEMA = pa.schema([
    ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("metadata", pa.string()),
    ("commit_timestamp", pa.int64()), ("expire_timestamp", pa.int64()),
])

CONSUMER_GROUPS_SCHEMA = pa.schema([("group", pa.string()), ("key", pa.binary()), ("value", pa.binary())])


class SnapshotError(Exception):
    """A snapshot that is incomplete, damaged or of an unknown format."""


class SnapshotNotFound(SnapshotError, FileNotFoundError):
    """No complete snapshot exists for the partition."""


@dataclass(frozen=True)
class SnapshotInfo:
    path: str
    manifest: dict

    @property
    def covers_log_offset(self) -> int | None:
        return self.manifest["covers_log_offset"]


def partition_root(root: str, partition: int) -> str:
    return os.path.join(root, f"__consumer_offsets-{partition}")


# ----------------------------------------------------------------- tables
def group_row(group_id: str, value: GroupMetadataValue | None) -> dict:
    if value is None:
        return {"group": group_id, "has_metadata": False, "state": "Empty", "protocol_type": None,
                "generation": 0, "protocol": None, "leader": None, "current_state_timestamp": -1,
                "member_count": 0, "value": None}
    try:
        raw = encode_value(value)
    except ValueError:  # a v3 string over 32767 bytes: only the flexible v4 can hold it
        raw = encode_value(value, 4)
    return {"group": group_id, "has_metadata": True, "state": "Stable" if value.members else "Empty",
            "protocol_type": value.protocol_type, "generation": value.generation,
            "protocol": value.protocol, "leader": value.leader,
            "current_state_timestamp": value.current_state_timestamp,
            "member_count": len(value.members), "value": raw}


def groups_table(groups: Iterable[tuple[str, GroupMetadataValue | None]]) -> pa.Table:
    return pa.Table.from_pylist([group_row(g, v) for g, v in groups], schema=GROUPS_SCHEMA)


def offsets_table(offsets: Iterable[tuple[OffsetCommitKey, OffsetCommitValue]]) -> pa.Table:
    cols: dict[str, list] = {name: [] for name in OFFSETS_SCHEMA.names}
    for k, v in offsets:
        cols["group"].append(k.group)
        cols["topic"].append(k.topic)
        cols["partition"].append(k.partition)
        cols["offset"].append(v.offset)
        cols["leader_epoch"].append(v.leader_epoch)
        cols["metadata"].append(v.metadata)
        cols["commit_timestamp"].append(v.commit_timestamp)
        cols["expire_timestamp"].append(v.expire_timestamp)
    return pa.Table.from_pydict(cols, schema=OFFSETS_SCHEMA)


def _complete_groups(groups: pa.Table, offsets: pa.Table) -> pa.Table:
    """Add a simple-group row for every group that has offsets but no row (Kafka
    creates such a group when it replays the first offset of an unknown group)."""
    with_offsets = pc.unique(offsets.column("group"))
    missing = pc.filter(with_offsets, pc.invert(pc.is_in(with_offsets, value_set=groups.column("group"))))
    if len(missing):
        extra = pa.Table.from_pylist([group_row(g, None) for g in missing.to_pylist()], schema=GROUPS_SCHEMA)
        groups = pa.concat_tables([groups, extra])
    return groups


# ---------------------------------------------------------------- writing
def _fsync_path(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY if directory else os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: str, data: bytes) -> dict:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return {"size": len(data), "crc32c": crc32c(data)}


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", row_group_size=1 << 20)
    return sink.getvalue().to_pybytes()


def prepare_snapshot(root: str, partition: int, groups: pa.Table, offsets: pa.Table,
                     covers_log_offset: int | None, *, offsets_partitions: int | None = None,
                     source: dict | None = None, created_at_ms: int | None = None,
                     consumer_groups: pa.Table | None = None) -> str:
    """Write a complete snapshot into a hidden temp directory; return its path.
    ``consumer_groups``: the live consumer-group records (CONSUMER_GROUPS_SCHEMA), if any.

    Nothing reads it until ``publish_snapshot`` renames it (the bulk-load job prepares
    every partition first and publishes only when all of them succeeded).
    """
    groups = _complete_groups(groups.cast(GROUPS_SCHEMA), offsets.cast(OFFSETS_SCHEMA))
    groups = groups.sort_by("group")
    offsets = offsets.cast(OFFSETS_SCHEMA).sort_by([("group", "ascending"), ("topic", "ascending"),
                                                     ("partition", "ascending")])
    created = int(time.time() * 1000) if created_at_ms is None else created_at_ms
    name = f"{created:013d}-{'none' if covers_log_offset is None else covers_log_offset}-{uuid.uuid4().hex[:8]}"
    base = partition_root(root, partition)
    os.makedirs(base, exist_ok=True)
    tmp = os.path.join(base, TMP_PREFIX + name)
    os.makedirs(tmp)
    files = {GROUPS_FILE: _write_file(os.path.join(tmp, GROUPS_FILE), _parquet_bytes(groups)),
             OFFSETS_FILE: _write_file(os.path.join(tmp, OFFSETS_FILE), _parquet_bytes(offsets))}
    consumer_rows = 0
    if consumer_groups is not None and consumer_groups.num_rows:
        consumer_groups = consumer_groups.cast(CONSUMER_GROUPS_SCHEMA).sort_by([("group", "ascending"),
                                                                                  ("key", "ascending")])
        consumer_rows = consumer_groups.num_rows
        files[CONSUMER_GROUPS_FILE] = _write_file(os.path.join(tmp, CONSUMER_GROUPS_FILE),
                                                  _parquet_bytes(consumer_groups))
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "partition": partition,
        "covers_log_offset": covers_log_offset, "offsets_partitions": offsets_partitions,
        "groups": groups.num_rows, "offsets": offsets.num_rows,
        "simple_groups": groups.num_rows - pc.sum(groups.column("has_metadata")).as_py()
        if groups.num_rows else 0,
        "files": files, "created_at_ms": created, "source": source or {},
    }
    if consumer_rows:
        manifest["consumer_group_records"] = consumer_rows
    _write_file(os.path.join(tmp, MANIFEST), json.dumps(manifest, indent=1, sort_keys=True).encode())
    _fsync_path(tmp, directory=True)
    return tmp


def publish_snapshot(tmp_path: str) -> str:
    """Atomically make a prepared snapshot visible; returns its final path."""
    parent, name = os.path.split(tmp_path.rstrip(os.sep))
    if not name.startswith(TMP_PREFIX):
        raise ValueError(f"{tmp_path} is not a prepared snapshot")
    final = os.path.join(parent, PREFIX + name[len(TMP_PREFIX):])
    os.rename(tmp_path, final)
    _fsync_path(parent, directory=True)
    return final


def write_snapshot(root: str, partition: int, groups, offsets, covers_log_offset: int | None,
                   **kwargs) -> str:
    """Write and publish a snapshot. ``groups`` is [(group_id, GroupMetadataValue|None)]
    and ``offsets`` [(OffsetCommitKey, OffsetCommitValue)], or pyarrow Tables in the
    GROUPS_SCHEMA / OFFSETS_SCHEMA layout. Returns the snapshot's path."""
    if not isinstance(groups, pa.Table):
        groups = groups_table(groups)
    if not isinstance(offsets, pa.Table):
        offsets = offsets_table(offsets)
    return publish_snapshot(prepare_snapshot(root, partition, groups, offsets, covers_log_offset, **kwargs))


# ---------------------------------------------------------------- reading
def _load_manifest(path: str) -> dict | None:
    try:
        with open(os.path.join(path, MANIFEST), "rb") as f:
            manifest = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        return None
    for name, meta in manifest.get("files", {}).items():
        try:
            if os.path.getsize(os.path.join(path, name)) != meta["size"]:
                return None
        except OSError:
            return None
    return manifest


def list_snapshots(root: str, partition: int) -> list[SnapshotInfo]:
    """Complete snapshots of a partition, oldest first (temp and manifest-less
    directories, and ones whose files do not match their manifest, are skipped)."""
    base = partition_root(root, partition)
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        if not name.startswith(PREFIX):
            continue
        path = os.path.join(base, name)
        manifest = _load_manifest(path)
        if manifest is not None and manifest.get("partition") == partition:
            found.append(SnapshotInfo(path, manifest))
    found.sort(key=lambda s: (s.manifest["created_at_ms"], os.path.basename(s.path)))
    return found


def latest_snapshot(root: str, partition: int) -> SnapshotInfo | None:
    """The most recently created complete snapshot of the partition, if any."""
    snaps = list_snapshots(root, partition)
    return snaps[-1] if snaps else None


def read_tables(path: str, verify: bool = True) -> tuple[dict, pa.Table, pa.Table]:
    """(manifest, groups table, offsets table) of one snapshot directory: the fast
    path (column access, no per-row objects). ``verify`` checks the CRC-32Cs."""
    manifest = _load_manifest(path)
    if manifest is None:
        raise SnapshotError(f"{path}: no valid {MANIFEST} (incomplete or damaged snapshot)")
    tables = []
    for name in (GROUPS_FILE, OFFSETS_FILE):
        with open(os.path.join(path, name), "rb") as f:
            data = f.read()
        if verify and crc32c(data) != manifest["files"][name]["crc32c"]:
            raise SnapshotError(f"{path}/{name}: CRC-32C does not match the manifest")
        tables.append(pq.read_table(pa.BufferReader(data)))
    groups, offsets = tables
    if groups.num_rows != manifest["groups"] or offsets.num_rows != manifest["offsets"]:
        raise SnapshotError(f"{path}: row counts differ from the manifest")
    return manifest, groups, offsets


def read_consumer_groups(path: str, manifest: dict, verify: bool = True) -> list[tuple[bytes, bytes]]:
    """The (key, value) record bytes of consumer_groups.parquet; [] when the snapshot has none."""
    meta = manifest["files"].get(CONSUMER_GROUPS_FILE)
    if meta is None:
        return []
    with open(os.path.join(path, CONSUMER_GROUPS_FILE), "rb") as f:
        data = f.read()
    if verify and crc32c(data) != meta["crc32c"]:
        raise SnapshotError(f"{path}/{CONSUMER_GROUPS_FILE}: CRC-32C does not match the manifest")
    table = pq.read_table(pa.BufferReader(data))
    if table.num_rows != manifest.get("consumer_group_records"):
        raise SnapshotError(f"{path}: consumer-group record count differs from the manifest")
    return list(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))


def groups_from_table(table: pa.Table) -> list[tuple[str, GroupMetadataValue | None]]:
    out = []
    for gid, raw in zip(table.column("group").to_pylist(), table.column("value").to_pylist()):
        out.append((gid, None if raw is None else decode_value(GroupMetadataKey(gid), raw)[1]))
    return out


def offsets_from_table(table: pa.Table) -> list[tuple[OffsetCommitKey, OffsetCommitValue]]:
    c = {name: table.column(name).to_pylist() for name in OFFSETS_SCHEMA.names}
    key, value = OffsetCommitKey, OffsetCommitValue
    return [(key(g, t, p), value(o, m, ct, le, et)) for g, t, p, o, le, m, ct, et in zip(
        c["group"], c["topic"], c["partition"], c["offset"], c["leader_epoch"], c["metadata"],
        c["commit_timestamp"], c["expire_timestamp"])]


def read_snapshot(root: str, partition: int, verify: bool = True):
    """(groups, offsets, covers_log_offset) of the partition's latest complete snapshot.

    groups: [(group_id, GroupMetadataValue or None for a simple group)];
    offsets: [(OffsetCommitKey, OffsetCommitValue)]. Raises SnapshotNotFound.
    """
    info = latest_snapshot(root, partition)
    if info is None:
        raise SnapshotNotFound(f"no complete snapshot of partition {partition} under {root}")
    manifest, groups, offsets = read_tables(info.path, verify)
    return groups_from_table(groups), offsets_from_table(offsets), manifest["covers_log_offset"]
