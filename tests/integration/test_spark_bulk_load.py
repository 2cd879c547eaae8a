"""spark_jobs.bulk_load against a plain-Python reference replay (local[2], one session)."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rules.placement import partition_for
from spark_jobs.bulk_load import run
from spark_jobs.common import JobError
from storage.dump import iter_log_records
from storage.records import GroupMetadataValue, MemberMetadata, OffsetCommitKey, OffsetCommitValue
from storage.snapshot import latest_snapshot, read_snapshot
from tests.support.spark import commit, delete_group, delete_offset, group_meta, offsets_dir, replay, write_log

SOURCE_PARTITIONS = 3


def member(mid):
    return MemberMetadata(mid, "client", "/127.0.0.1", 10000, b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff",
                          b"", None, 30000)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Three partitions (placed with 3 partitions), several segments each: commits,
    superseded commits, group metadata, offset and group tombstones."""
    root = str(tmp_path_factory.mktemp("logs"))
    groups = [f"group-{i}" for i in range(12)]
    batches = {p: [] for p in range(SOURCE_PARTITIONS)}
    for round_ in range(6):
        for gi, g in enumerate(groups):
            p = partition_for(g, SOURCE_PARTITIONS)
            recs = [commit(g, f"topic-{t}", q, round_ * 100 + q, 1000 + round_, metadata=f"r{round_}")
                    for t in range(2) for q in range(3)]
            if round_ == 0 and gi % 2 == 0:
                recs.append(group_meta(g, GroupMetadataValue("consumer", 1, "range", "m", (member("m"),), 5)))
            if round_ == 4 and gi % 4 == 0:
                recs.append(group_meta(g, GroupMetadataValue("consumer", 2, None, None, (), 50)))
            batches[p].append(recs)
    for g in groups[:3]:  # offset tombstones, and one whole group deleted
        batches[partition_for(g, SOURCE_PARTITIONS)].append([delete_offset(g, "topic-1", 2)])
    g = groups[5]
    p = partition_for(g, SOURCE_PARTITIONS)
    batches[p].append([delete_offset(g, f"topic-{t}", q) for t in range(2) for q in range(3)]
                      + [delete_group(g)])
    for p, bs in batches.items():
        write_log(offsets_dir(root, p), bs, segment_bytes=4096)
    return root


def snapshot_state(out, partition):
    groups, offsets, covers = read_snapshot(out, partition)
    return dict(groups), dict(offsets), covers


def test_snapshot_equals_reference_replay(spark, logs, tmp_path):
    out = str(tmp_path / "snap")
    summary = run(["--master", "local[2]", "--input", logs, "--output", out,
                   "--offsets-partitions", str(SOURCE_PARTITIONS)], spark=spark)
    assert summary["same_layout"] and summary["snapshots"] == SOURCE_PARTITIONS
    total_offsets = 0
    for p in range(SOURCE_PARTITIONS):
        d = offsets_dir(logs, p)
        assert len([n for n in os.listdir(d) if n.endswith(".log")]) > 1  # several segments
        groups, offsets = replay(d)
        got_groups, got_offsets, covers = snapshot_state(out, p)
        assert got_groups == groups and got_offsets == offsets
        total_offsets += len(offsets)
        assert covers == max(o for o, _, _ in iter_log_records(d)) + 1  # next offset after the last record
    assert summary["offsets"] == total_offsets
    assert "group-5" not in snapshot_state(out, partition_for("group-5", SOURCE_PARTITIONS))[0]


def _write_exports(tmp_path):
    rows = [{"group": f"exp-{i}", "topic": "t", "partition": i % 4, "offset": i, "metadata": f"m{i}",
             "commit_timestamp": 10_000 + i, "leader_epoch": 3, "expire_timestamp": -1} for i in range(30)]
    csv = tmp_path / "e.csv"
    cols = ["group", "topic", "partition", "offset", "metadata", "commit_timestamp"]
    csv.write_text(",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows[:10]))
    jsonl = tmp_path / "e.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows[10:20]))
    # one export row for a key the log has: the log wins
    clash = {"group": "group-1", "topic": "topic-0", "partition": 0, "offset": 999999, "metadata": "old",
             "commit_timestamp": 1, "leader_epoch": -1, "expire_timestamp": -1}
    parquet = tmp_path / "e.parquet"
    pq.write_table(pa.Table.from_pylist(rows[20:] + [clash]), str(parquet))
    return rows, [str(csv), str(jsonl), str(parquet)]


def test_exports_and_another_partition_count(spark, logs, tmp_path):
    rows, exports = _write_exports(tmp_path)
    out = str(tmp_path / "snap")
    target = 7
    summary = run(["--input", logs, "--export", *exports, "--output", out,
                   "--offsets-partitions", str(target)], spark=spark)
    assert not summary["same_layout"]
    groups, offsets = replay([offsets_dir(logs, p) for p in range(SOURCE_PARTITIONS)])
    for r in rows:
        key = OffsetCommitKey(r["group"], r["topic"], r["partition"])
        epoch = -1 if r["offset"] < 10 else r["leader_epoch"]  # the CSV has no leader_epoch column
        offsets[key] = OffsetCommitValue(r["offset"], r["metadata"], r["commit_timestamp"], epoch, -1)
        groups.setdefault(r["group"], None)
    seen_groups, seen_offsets = {}, {}
    for p in range(target):
        got_groups, got_offsets, covers = snapshot_state(out, p)
        assert covers is None  # another layout: the snapshot covers no log offset
        assert all(partition_for(g, target) == p for g in got_groups)
        seen_groups.update(got_groups)
        seen_offsets.update(got_offsets)
    assert seen_offsets == offsets
    assert seen_groups == groups
    assert seen_groups["exp-3"] is None  # imported group: a simple (Empty, no metadata) group
    info = latest_snapshot(out, partition_for("exp-3", target))
    assert info.manifest["simple_groups"] >= 1 and info.manifest["covers_log_offset"] is None


def _corrupt_copy(logs, tmp_path):
    bad_root = str(tmp_path / "bad")
    shutil.copytree(logs, bad_root)
    d = offsets_dir(bad_root, 0)
    first = os.path.join(d, sorted(n for n in os.listdir(d) if n.endswith(".log"))[0])
    data = bytearray(open(first, "rb").read())
    data[200] ^= 0xFF  # inside the first batch's records: CRC mismatch
    open(first, "wb").write(bytes(data))
    return bad_root, first


def test_corrupt_batch_fails_without_partial_output(spark, logs, tmp_path):
    bad_root, bad_file = _corrupt_copy(logs, tmp_path)
    out = str(tmp_path / "snap")
    with pytest.raises(JobError) as err:
        run(["--input", bad_root, "--output", out, "--offsets-partitions", "3"], spark=spark)
    assert bad_file in str(err.value) and "position 0" in str(err.value)
    leftovers = [f for _, _, files in os.walk(out) for f in files] if os.path.exists(out) else []
    assert leftovers == []
    for p in range(3):
        assert latest_snapshot(out, p) is None

    summary = run(["--input", bad_root, "--output", out, "--offsets-partitions", "3", "--skip-corrupt"],
                  spark=spark)
    assert len(summary["skipped"]) == 1 and bad_file in summary["skipped"][0]
    assert summary["snapshots"] == 3
