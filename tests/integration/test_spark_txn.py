"""The Spark jobs over an offsets log with transactions: a committed one (its marker in a later segment), two
aborted ones (one decided in its segment, one in a later one) and one still open at the log end. The bulk load's
snapshot plus the server's load give exactly the committed offsets, the open transaction's ones still pending
(replayed from the log after the snapshot); the expire job's compaction keeps the committed offset an aborted
record would have superseded, cleans nothing from the open transaction's segment on, and expires no offset with
a pending one (nor the group)."""

from __future__ import annotations

import asyncio
import os
import shutil

from coordinator.groups.settings import GroupSettings
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_all
from coordinator.runtime.timers import FakeScheduler
from spark_jobs import bulk_load, expire
from storage.batch import decode_records, iter_batches
from storage.compaction import list_staging, validate_staging
from storage.records import decode_key, read_offset_value
from storage.snapshot import read_snapshot
from tests.support.spark import offsets_dir
from tests.support.txn_logs import marker, plain, txn, write_segments

RETENTION_MIN = 10
SEGMENTS = [
    # 0 t1=5 | 1 t0=10 | 2 P100 t0=20 (committed at 5) | 3 P200 t1=30 | 4 ABORT P200
    [plain(1, 5), plain(0, 10), txn(100, 0, 20), txn(200, 1, 30), marker(200, False)],
    # 5 COMMIT P100 | 6 P300 t2=40 (aborted at 8) | 7 t3=1
    [marker(100, True), txn(300, 2, 40), plain(3, 1)],
    # 8 ABORT P300 | 9 t3=2 | 10 P400 t4=50 (never ends) | 11 t3=3
    [marker(300, False), plain(3, 2), txn(400, 4, 50), plain(3, 3)],
    # 12 t5=60 | 13 P400 t3=55 (active segment)
    [plain(5, 60), txn(400, 3, 55)],
]
COMMITTED = {0: 20, 1: 5, 3: 3, 5: 60}
PENDING = [(400, 3, 55), (400, 4, 50)]


def make_log(root: str) -> str:
    path = offsets_dir(root, 0)
    write_segments(path, SEGMENTS)
    return path


def server_state(root: str, snapshot_root: str | None = None) -> tuple[dict, list]:
    """What the server loads: committed offsets of group g by partition of topic t, pending ones."""
    async def go():
        durable = DurableLog(root, flush_policy="none")
        coordinator = GroupCoordinator(GroupSettings(offsets_partitions=1, initial_rebalance_delay_ms=0),
                                       FakeScheduler(), durable, owned=range(1))
        for shard in coordinator.owned_shards():
            durable.open_partition(shard.partition)
        await load_all(coordinator.owned_shards(), durable, snapshot_root, chunk_bytes=256)
        store = coordinator.shard_for("g").offsets
        committed = {p: v.offset for t, p, v in store.items("g")}
        pending = sorted((pid, key[2], entry.value.offset) for pid, key, entry in store.txn.entries())
        await durable.close()
        return committed, pending
    return asyncio.run(go())


def test_bulk_load_snapshot_and_server_load_give_committed_and_pending(spark, tmp_path):
    root = str(tmp_path / "logs")
    make_log(root)
    assert server_state(str(tmp_path / "logs")) == (COMMITTED, PENDING)  # the server's own load: the reference
    out = str(tmp_path / "snap")
    summary = bulk_load.run(["--master", "local[2]", "--input", root, "--output", out, "--offsets-partitions", "1"],
                            spark=spark)
    assert summary["covers_log_offsets"] == {0: 10}  # P400's first offset: the last stable offset
    assert summary["open_transactions"] == {0: 10}
    groups, offsets, covers = read_snapshot(out, 0)
    assert covers == 10
    assert {k.partition: v.offset for k, v in offsets} == {0: 20, 1: 5, 3: 2}  # nothing aborted, nothing >= 10
    fresh = str(tmp_path / "server")
    shutil.copytree(root, fresh)
    assert server_state(fresh, out) == (COMMITTED, PENDING)


def test_expire_compaction_follows_the_transactions(spark, tmp_path):
    root = str(tmp_path / "logs")
    path = make_log(root)
    now = 1000 + RETENTION_MIN * 60_000 + 1  # every committed offset is past the retention
    expire.run(["--master", "local[2]", "--log-dirs", root, "--offsets-retention-minutes", str(RETENTION_MIN),
                "--now-ms", str(now), "--offsets-partitions", "1"], spark=spark)
    [(staging, manifest)] = list_staging(path)
    assert validate_staging(path, manifest) == []
    assert manifest["upper_bound"] == 8  # the segment holding P400's first offset is not cleaned, nor any after
    assert [s["base_offset"] for s in manifest["segments"]] == [0, 5]
    kept = {}
    for seg in manifest["segments"]:
        with open(os.path.join(staging, seg["cleaned"]["file"]), "rb") as f:
            for batch in iter_batches(f.read()):
                for r in decode_records(batch):
                    kept[r.offset] = "marker" if batch.is_control else (
                        decode_key(r.key)[1].partition, read_offset_value(r.value)[0])
    # t1=5 stays (P200's aborted 30 superseded nothing and is gone), P100's committed 20 supersedes the 10,
    # P300's aborted 40 (its marker in a later segment) is gone, the markers stay
    assert kept == {0: (1, 5), 2: (0, 20), 4: "marker", 5: "marker", 7: (3, 1)}
    tombs = manifest["tombstones"]["records"]
    # t3 has a pending offset (P400): it does not expire, and the group with an open transaction is not deleted
    assert sorted((t["type"], t.get("partition")) for t in tombs) == [
        ("offset_commit", 0), ("offset_commit", 1), ("offset_commit", 5)]
    applied = str(tmp_path / "applied")
    dest = offsets_dir(applied, 0)
    shutil.copytree(path, dest, ignore=shutil.ignore_patterns(".staging-*"))
    for seg in manifest["segments"]:
        shutil.copyfile(os.path.join(staging, seg["cleaned"]["file"]), os.path.join(dest, seg["file"]))
        for suffix in (".index", ".timeindex"):
            stem = os.path.join(dest, seg["file"][:-len(".log")])
            if os.path.exists(stem + suffix):
                os.unlink(stem + suffix)
    assert server_state(applied) == (COMMITTED, PENDING)

