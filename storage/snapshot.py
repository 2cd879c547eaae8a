"""Per-partition state snapshots of __consumer_offsets, loadable without Spark, a JVM or pyarrow.

A snapshot is the replayed state of one offsets partition (every live group and
every live offset, tombstoned keys gone) plus the log offset it covers: the server
loads it, then replays its log from ``covers_log_offset`` (or does not replay the
log at all when that is None: a snapshot made from an export, or from logs of a
different partition layout, covers no offset of this partition's log).

Layout, under a snapshot root (the bulk-load ``--output``)::

    __consumer_offsets-<p>/snapshot-<created ms>-<covers|none>-<id>/
        records.log       the live records in Kafka's record-batch format (v2 batches, as in a
                          __consumer_offsets segment): GroupMetadata records (by group), then the
                          KIP-848 consumer-group records (by group, key), then OffsetCommit records
                          (by group, topic, partition); `kafka-coordinator dump-log` prints it
        MANIFEST.json     written last; a directory without it is ignored

Format 2 (above) is what the bulk-load job writes and what the server reads with the record
decoders it uses for its own log: the server needs no pyarrow (its container image has none).
Format 1 snapshots (groups.parquet, offsets.parquet, consumer_groups.parquet: the same
state as columns) are still read, through storage/snapshot_parquet.py, where pyarrow is
installed (the `snapshots` extra); without it such a snapshot fails to load with a message
that says so. The writer takes pyarrow Tables (GROUPS_SCHEMA, OFFSETS_SCHEMA,
CONSUMER_GROUPS_SCHEMA: the bulk-load job's columns) or lists of records.

It is written into ``.tmp-snapshot-...`` (files fsync'ed, manifest last), then
renamed into place and the parent directory fsync'ed, so a reader never sees a
half-written snapshot. The manifest carries each file's size and CRC-32C, and counts:
groups (incl. simple groups: a group that exists only through its offsets, Kafka's EMPTY
classic group with no protocol type and generation 0, has no record of its own),
simple_groups, offsets, consumer_group_records, records.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crc32c import crc32c

from .batch import build_batch, ensure_valid, iter_batches
from .errors import RecordError
from .record_readers import default_reader
from .records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordType,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    offset_key_bytes,
    offset_value_bytes,
)
from .snapshot_parquet import (  # format 1
    FormatOneError,
    read_pairs as read_format_one,
    require_pyarrow,
)

if TYPE_CHECKING:
    import pyarrow as pa

FORMAT = "kgc-offsets-snapshot"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
MANIFEST = "MANIFEST.json"
RECORDS_FILE = "records.log"
PREFIX = "snapshot-"
TMP_PREFIX = ".tmp-snapshot-"
RECORDS_PER_BATCH = 4096

Pair = tuple[bytes, bytes | None]


def __getattr__(name: str) -> Any:
    """GROUPS_SCHEMA, OFFSETS_SCHEMA, CONSUMER_GROUPS_SCHEMA: the writer's (and format 1's) pyarrow schemas,
    made on first use so that importing this module (the server does) needs no pyarrow."""
    if name in ("GROUPS_SCHEMA", "OFFSETS_SCHEMA", "CONSUMER_GROUPS_SCHEMA"):
        pa = _pyarrow("writing a snapshot from tables")
        schemas = {
            "GROUPS_SCHEMA": pa.schema([
                ("group", pa.string()), ("has_metadata", pa.bool_()), ("state", pa.string()),
                ("protocol_type", pa.string()), ("generation", pa.int32()), ("protocol", pa.string()),
                ("leader", pa.string()), ("current_state_timestamp", pa.int64()),
                ("member_count", pa.int32()), ("value", pa.binary()),
            ]),
            "OFFSETS_SCHEMA": pa.schema([
                ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("metadata", pa.string()),
                ("commit_timestamp", pa.int64()), ("expire_timestamp", pa.int64()),
            ]),
            "CONSUMER_GROUPS_SCHEMA": pa.schema([("group", pa.string()), ("key", pa.binary()),
                                                 ("value", pa.binary())]),
        }
        globals().update(schemas)
        return schemas[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SnapshotError(Exception):
    """A snapshot that is incomplete, damaged or of an unknown format."""


class SnapshotNotFound(SnapshotError, FileNotFoundError):
    """No complete snapshot exists for the partition."""


def _pyarrow(why: str) -> Any:
    try:
        return require_pyarrow(why)
    except FormatOneError as exc:
        raise SnapshotError(str(exc)) from None


@dataclass(frozen=True)
class SnapshotInfo:
    path: str
    manifest: dict

    @property
    def covers_log_offset(self) -> int | None:
        return self.manifest["covers_log_offset"]


def partition_root(root: str, partition: int) -> str:
    return os.path.join(root, f"__consumer_offsets-{partition}")


# ----------------------------------------------------------------- tables (the writer's input)
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
    pa = _pyarrow("a groups table")
    return pa.Table.from_pylist([group_row(g, v) for g, v in groups], schema=__getattr__("GROUPS_SCHEMA"))


def offsets_table(offsets: Iterable[tuple[OffsetCommitKey, OffsetCommitValue]]) -> pa.Table:
    pa = _pyarrow("an offsets table")
    schema = __getattr__("OFFSETS_SCHEMA")
    cols: dict[str, list] = {name: [] for name in schema.names}
    for k, v in offsets:
        cols["group"].append(k.group)
        cols["topic"].append(k.topic)
        cols["partition"].append(k.partition)
        cols["offset"].append(v.offset)
        cols["leader_epoch"].append(v.leader_epoch)
        cols["metadata"].append(v.metadata)
        cols["commit_timestamp"].append(v.commit_timestamp)
        cols["expire_timestamp"].append(v.expire_timestamp)
    return pa.Table.from_pydict(cols, schema=schema)


def _state_pairs(groups: pa.Table, offsets: pa.Table, consumer_groups: pa.Table | None
                 ) -> tuple[list[Pair], dict[str, int]]:
    """The snapshot's records in load order (groups, consumer-group records, offsets; each sorted) and its counts."""
    groups = groups.cast(__getattr__("GROUPS_SCHEMA")).sort_by("group")
    offsets = offsets.cast(__getattr__("OFFSETS_SCHEMA")).sort_by(
        [("group", "ascending"), ("topic", "ascending"), ("partition", "ascending")])
    pairs: list[Pair] = []
    named = set()
    for gid, raw in zip(groups.column("group").to_pylist(), groups.column("value").to_pylist()):
        named.add(gid)
        if raw is not None:
            pairs.append((encode_key(GroupMetadataKey(gid)), raw))
    metadata = len(pairs)
    consumer = 0
    if consumer_groups is not None and consumer_groups.num_rows:
        consumer_groups = consumer_groups.cast(__getattr__("CONSUMER_GROUPS_SCHEMA")).sort_by(
            [("group", "ascending"), ("key", "ascending")])
        pairs.extend(zip(consumer_groups.column("key").to_pylist(), consumer_groups.column("value").to_pylist()))
        consumer = consumer_groups.num_rows
    c = {name: offsets.column(name).to_pylist() for name in offsets.column_names}
    for g, t, p, o, le, m, ct, et in zip(c["group"], c["topic"], c["partition"], c["offset"], c["leader_epoch"],
                                         c["metadata"], c["commit_timestamp"], c["expire_timestamp"]):
        pairs.append((offset_key_bytes(g, t, p), offset_value_bytes(o, m or "", ct, le, et)))
    simple = len(set(c["group"]) - named)  # offsets of a group with no row: Kafka makes it a simple group
    simple += sum(1 for raw in groups.column("value").to_pylist() if raw is None)
    counts = {"groups": groups.num_rows + len(set(c["group"]) - named), "offsets": offsets.num_rows,
              "simple_groups": simple, "group_metadata_records": metadata, "records": len(pairs)}
    if consumer:
        counts["consumer_group_records"] = consumer
    return pairs, counts


def _records_bytes(pairs: list[Pair], timestamp: int) -> bytes:
    """The records as uncompressed v2 batches of RECORDS_PER_BATCH, offsets from 0."""
    out = bytearray()
    for begin in range(0, len(pairs), RECORDS_PER_BATCH):
        chunk = pairs[begin:begin + RECORDS_PER_BATCH]
        out += build_batch(((key, value, timestamp) for key, value in chunk), begin)
    return bytes(out)


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


def prepare_snapshot(root: str, partition: int, groups: pa.Table, offsets: pa.Table,
                     covers_log_offset: int | None, *, offsets_partitions: int | None = None,
                     source: dict | None = None, created_at_ms: int | None = None,
                     consumer_groups: pa.Table | None = None) -> str:
    """Write a complete snapshot (format 2) into a hidden temp directory; return its path.
    ``consumer_groups``: the live consumer-group records (CONSUMER_GROUPS_SCHEMA), if any.

    Nothing reads it until ``publish_snapshot`` renames it (the bulk-load job prepares
    every partition first and publishes only when all of them succeeded).
    """
    created = int(time.time() * 1000) if created_at_ms is None else created_at_ms
    pairs, counts = _state_pairs(groups, offsets, consumer_groups)
    if len({key for key, _ in pairs}) != len(pairs):  # a state holds each key once (the reader relies on it)
        raise ValueError(f"partition {partition}: the snapshot's tables hold a key twice")
    name = f"{created:013d}-{'none' if covers_log_offset is None else covers_log_offset}-{uuid.uuid4().hex[:8]}"
    base = partition_root(root, partition)
    os.makedirs(base, exist_ok=True)
    tmp = os.path.join(base, TMP_PREFIX + name)
    os.makedirs(tmp)
    files = {RECORDS_FILE: _write_file(os.path.join(tmp, RECORDS_FILE), _records_bytes(pairs, created))}
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "partition": partition,
        "covers_log_offset": covers_log_offset, "offsets_partitions": offsets_partitions,
        **counts, "files": files, "created_at_ms": created, "source": source or {},
    }
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
    pa = _pyarrow("writing a snapshot")
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
    if manifest.get("format") != FORMAT or manifest.get("format_version") not in READABLE_VERSIONS:
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


def read_file(path: str, manifest: dict, name: str, verify: bool = True) -> bytes:
    """One of the snapshot's files, its CRC-32C checked against the manifest when `verify`."""
    with open(os.path.join(path, name), "rb") as f:
        data = f.read()
    if verify and crc32c(data) != manifest["files"][name]["crc32c"]:
        raise SnapshotError(f"{path}/{name}: CRC-32C does not match the manifest")
    return data


class _Collect:
    """The fold a record reader fills (storage/record_readers.py): a snapshot has each key once and no tombstone,
    so the dict keeps every record, in file order."""

    __slots__ = ("latest",)

    def __init__(self) -> None:
        self.latest: dict[bytes, bytes | None] = {}

    def put(self, key: bytes, value: bytes | None) -> None:
        self.latest[key] = value


def read_records(path: str, verify: bool = True) -> tuple[dict, list[Pair]]:
    """(manifest, the (key, value) record bytes in load order) of one snapshot directory, either format."""
    manifest = _load_manifest(path)
    if manifest is None:
        raise SnapshotError(f"{path}: no valid {MANIFEST} (incomplete or damaged snapshot)")
    if manifest["format_version"] == 1:
        try:
            return manifest, read_format_one(path, manifest, lambda name: read_file(path, manifest, name, verify))
        except FormatOneError as exc:
            raise SnapshotError(str(exc)) from None
    data = read_file(path, manifest, RECORDS_FILE, verify)
    fold = _Collect()
    reader, view = default_reader(), memoryview(data)
    try:
        for batch in iter_batches(data):
            if verify:
                ensure_valid(batch)
            if batch.compression or batch.is_control:
                raise SnapshotError(f"{path}/{RECORDS_FILE}: a compressed or control batch (format 2 has none)")
            reader.read_plain(data, view, batch.position, batch.position + batch.size, fold)
    except RecordError as exc:
        raise SnapshotError(f"{path}/{RECORDS_FILE}: {exc}") from None
    pairs: list[Pair] = list(fold.latest.items())
    if len(pairs) != manifest["records"]:
        raise SnapshotError(f"{path}: {len(pairs)} records, the manifest says {manifest['records']}")
    return manifest, pairs


def state_of(pairs: Iterable[Pair]) -> Iterator[tuple[Any, Any]]:
    """(key, value) objects of the classic records (GroupMetadata, OffsetCommit); consumer-group records skipped."""
    for key_bytes, value_bytes in pairs:
        try:
            _version, key = decode_key(key_bytes)
        except UnknownRecordType:  # a KIP-848 consumer-group record
            continue
        yield key, (None if value_bytes is None else decode_value(key, value_bytes)[1])


def read_snapshot(root: str, partition: int, verify: bool = True):
    """(groups, offsets, covers_log_offset) of the partition's latest complete snapshot.

    groups: [(group_id, GroupMetadataValue or None for a simple group)], by group id;
    offsets: [(OffsetCommitKey, OffsetCommitValue)]. Raises SnapshotNotFound.
    """
    info = latest_snapshot(root, partition)
    if info is None:
        raise SnapshotNotFound(f"no complete snapshot of partition {partition} under {root}")
    manifest, pairs = read_records(info.path, verify)
    groups: dict[str, GroupMetadataValue | None] = {}
    offsets = []
    for key, value in state_of(pairs):
        if isinstance(key, GroupMetadataKey):
            groups[key.group] = value
        else:
            offsets.append((key, value))
            groups.setdefault(key.group, None)
    return sorted(groups.items()), offsets, manifest["covers_log_offset"]
