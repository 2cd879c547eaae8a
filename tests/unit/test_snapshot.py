"""storage.snapshot: round trip, latest-complete selection, incomplete snapshots ignored."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from storage.records import GroupMetadataValue, MemberMetadata, OffsetCommitKey, OffsetCommitValue
from storage.snapshot import (
    MANIFEST,
    SnapshotError,
    SnapshotNotFound,
    groups_table,
    latest_snapshot,
    list_snapshots,
    offsets_table,
    prepare_snapshot,
    read_snapshot,
    read_tables,
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
    manifest, gt, ot = read_tables(path)
    assert manifest["groups"] == 3 and manifest["offsets"] == 4 and manifest["simple_groups"] == 1
    assert gt.column("state").to_pylist() == ["Empty", "Empty", "Stable"]  # sorted by group id


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
    with open(os.path.join(broken, "offsets.parquet"), "ab") as f:
        f.write(b"x")
    assert [s.covers_log_offset for s in list_snapshots(root, 1)] == [10, 20]
    assert latest_snapshot(root, 1).path == newest
    assert read_snapshot(root, 1)[2] == 20
    with pytest.raises(SnapshotNotFound):
        read_snapshot(root, 2)


def test_crc_mismatch_detected(tmp_path):
    groups, offsets = sample()
    path = write_snapshot(str(tmp_path), 0, groups, offsets, 1)
    name = os.path.join(path, "groups.parquet")
    data = bytearray(open(name, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(name, "wb").write(bytes(data))
    with pytest.raises(SnapshotError):
        read_tables(path)


def test_load_rate(tmp_path):
    """Measure (and print) the load rate of 1M offsets: columns and objects."""
    import pyarrow as pa

    from storage.snapshot import OFFSETS_SCHEMA, offsets_from_table

    n = 1_000_000
    table = pa.table({
        "group": [f"group-{i % 5000}" for i in range(n)], "topic": [f"topic-{i % 20}" for i in range(n)],
        "partition": pa.array([i % 64 for i in range(n)], pa.int32()), "offset": list(range(n)),
        "leader_epoch": pa.array([1] * n, pa.int32()), "metadata": [""] * n,
        "commit_timestamp": list(range(n)), "expire_timestamp": [-1] * n}, schema=OFFSETS_SCHEMA)
    path = write_snapshot(str(tmp_path), 0, [], table, 0)
    t0 = time.perf_counter()
    _, _, offsets = read_tables(path)
    cols = {c: offsets.column(c).to_pylist() for c in ("group", "topic", "partition", "offset")}
    t_cols = time.perf_counter() - t0
    t0 = time.perf_counter()
    objects = offsets_from_table(offsets)
    t_obj = time.perf_counter() - t0
    assert len(objects) == n and len(cols["offset"]) == n
    print(f"\nsnapshot load: {n / t_cols:,.0f} offsets/s (read + CRC + columns), "
          f"{n / t_obj:,.0f} offsets/s building key/value objects")
    shutil.rmtree(path)
