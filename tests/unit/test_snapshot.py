"""storage.snapshot: round trip, latest-complete selection, incomplete snapshots ignored."""

from __future__ import annotations

import os
import shutil

import pytest

from storage.records import GroupMetadataValue, MemberMetadata, OffsetCommitKey, OffsetCommitValue
from storage.snapshot import (
    MANIFEST,
    RECORDS_FILE,
    SnapshotError,
    SnapshotNotFound,
    groups_table,
    latest_snapshot,
    list_snapshots,
    offsets_table,
    prepare_snapshot,
    read_records,
    read_snapshot,
    state_of,
    write_snapshot,
)

STABLE = GroupMetadataValue("consumer", 7, "range", "m-1", (
    MemberMetadata("m-1", "client", "/10.0.0.1", 10000, b"\x00\x01sub", b"\x00\x01asg", "inst-1", 30000),), 1234)
EMPTY = GroupMetadataValue("consumer", 3, None, None, (), 999)


def sample():
    groups = [("g-stable", STABLE), ("g-empty", EMPTY)]
    offsets = [(OffsetCommitKey("g-stable", "t", p), OffsetCommitValue(p * 10, f"m{p}", 100 + p, 4))
               for p in range(3)]
    offsets.append((OffsetCommitKey("g-simple", "ü-topic", 0), OffsetCommitValue(5, "", 7, -1, 99)))
    return groups, offsets


def test_round_trip(tmp_path):
    groups, offsets = sample()
    path = write_snapshot(str(tmp_path), 4, groups, offsets, 1234, offsets_partitions=50)
    got_groups, got_offsets, covers = read_snapshot(str(tmp_path), 4)
    assert covers == 1234
    # a group with offsets but no metadata is added as a simple group (None)
    assert dict(got_groups) == {"g-stable": STABLE, "g-empty": EMPTY, "g-simple": None}
    assert sorted(got_offsets, key=repr) == sorted(offsets, key=repr)
    manifest, pairs = read_records(path)
    assert manifest["groups"] == 3 and manifest["offsets"] == 4 and manifest["simple_groups"] == 1
    assert manifest["format_version"] == 2 and manifest["records"] == 6 == len(pairs)
    # records in load order: group metadata by group id, then the offsets by group, topic, partition
    assert [getattr(k, "topic", None) or k.group for k, _ in state_of(pairs)] == [
        "g-empty", "g-stable", "ü-topic", "t", "t", "t"]


def test_covers_none_and_empty(tmp_path):
    write_snapshot(str(tmp_path), 0, [], [], None)
    groups, offsets, covers = read_snapshot(str(tmp_path), 0)
    assert (groups, offsets, covers) == ([], [], None)


def test_latest_complete_selected_and_half_written_ignored(tmp_path):
    root = str(tmp_path)
    groups, offsets = sample()
    write_snapshot(root, 1, groups, offsets[:1], 10, created_at_ms=1000)
    newest = write_snapshot(root, 1, groups, offsets, 20, created_at_ms=2000)
    # a prepared, never published snapshot (crash before the rename) is invisible
    prepare_snapshot(root, 1, groups_table(groups), offsets_table(offsets), 99, created_at_ms=3000)
    # a published directory whose manifest is missing (copied by hand, half done)
    half = write_snapshot(root, 1, groups, offsets, 50, created_at_ms=4000)
    os.unlink(os.path.join(half, MANIFEST))
    # one whose file does not match its manifest
    broken = write_snapshot(root, 1, groups, offsets, 60, created_at_ms=5000)
    with open(os.path.join(broken, RECORDS_FILE), "ab") as f:
        f.write(b"x")
    assert [s.covers_log_offset for s in list_snapshots(root, 1)] == [10, 20]
    assert latest_snapshot(root, 1).path == newest
    assert read_snapshot(root, 1)[2] == 20
    with pytest.raises(SnapshotNotFound):
        read_snapshot(root, 2)


def test_crc_mismatch_detected(tmp_path):
    groups, offsets = sample()
    path = write_snapshot(str(tmp_path), 0, groups, offsets, 1)
    name = os.path.join(path, RECORDS_FILE)
    data = bytearray(open(name, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(name, "wb").write(bytes(data))
    with pytest.raises(SnapshotError, match="CRC-32C"):
        read_records(path)


def test_a_large_format_one_snapshot_reads_back_every_offset(tmp_path):
    """20k offsets of 5,000 groups through a Parquet snapshot: every one read back, as records and as key/value
    objects (its read rate is a benchmark's business: bench/bench_offsets.py --load-mb)."""
    import pyarrow as pa

    from storage.snapshot import OFFSETS_SCHEMA

    n = 20_000
    table = pa.table({
        "group": [f"group-{i % 5000}" for i in range(n)], "topic": [f"topic-{i % 20}" for i in range(n)],
        "partition": pa.array(list(range(n)), pa.int32()), "offset": list(range(n)),  # keys unique, as in a snapshot
        "leader_epoch": pa.array([1] * n, pa.int32()), "metadata": [""] * n,
        "commit_timestamp": list(range(n)), "expire_timestamp": [-1] * n}, schema=OFFSETS_SCHEMA)
    path = write_snapshot(str(tmp_path), 0, [], table, 0)
    _, pairs = read_records(path)
    objects = list(state_of(pairs))
    assert len(objects) == n == len(pairs)
    assert {(key.group, key.partition, value.offset) for key, value in objects} == {
        (f"group-{i % 5000}", i, i) for i in range(n)}
    shutil.rmtree(path)


def _write_format_one(root: str, partition: int, groups, offsets, covers: int) -> str:
    """A snapshot as the bulk load wrote it before format 2: Parquet tables."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq
    from crc32c import crc32c

    path = os.path.join(root, f"__consumer_offsets-{partition}", "snapshot-0000000001000-none-abcdef12")
    os.makedirs(path)
    files = {}
    for name, table in (("groups.parquet", groups_table(groups)), ("offsets.parquet", offsets_table(offsets))):
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        data = sink.getvalue().to_pybytes()
        open(os.path.join(path, name), "wb").write(data)
        files[name] = {"size": len(data), "crc32c": crc32c(data)}
    manifest = {"format": "kgc-offsets-snapshot", "format_version": 1, "partition": partition,
                "covers_log_offset": covers, "groups": len(groups), "offsets": len(offsets), "files": files,
                "created_at_ms": 1000}
    open(os.path.join(path, MANIFEST), "w").write(json.dumps(manifest))
    return path


def test_format_one_parquet_snapshots_are_still_read(tmp_path):
    groups, offsets = sample()
    _write_format_one(str(tmp_path), 3, groups + [("g-simple", None)], offsets, 77)
    got_groups, got_offsets, covers = read_snapshot(str(tmp_path), 3)
    assert covers == 77
    assert dict(got_groups) == {"g-stable": STABLE, "g-empty": EMPTY, "g-simple": None}
    assert sorted(got_offsets, key=repr) == sorted(offsets, key=repr)


def test_without_pyarrow_format_two_loads_and_format_one_says_what_is_missing(tmp_path, monkeypatch):
    import sys

    groups, offsets = sample()
    write_snapshot(str(tmp_path / "new"), 0, groups, offsets, 5)
    _write_format_one(str(tmp_path / "old"), 0, groups, offsets, 5)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    got_groups, got_offsets, _ = read_snapshot(str(tmp_path / "new"), 0)
    assert dict(got_groups)["g-stable"] == STABLE and len(got_offsets) == 4
    with pytest.raises(SnapshotError, match=r"needs pyarrow.*kafka-group-coordinator\[snapshots\]"):
        read_snapshot(str(tmp_path / "old"), 0)


def test_a_key_twice_is_refused_by_the_writer(tmp_path):
    groups, offsets = sample()
    with pytest.raises(ValueError, match="a key twice"):
        write_snapshot(str(tmp_path), 0, groups, offsets + offsets[:1], 1)
