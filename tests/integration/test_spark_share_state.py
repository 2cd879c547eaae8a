"""The Spark job over `__share_group_state` (spark_jobs/share_state.py): a log written by the share coordinator's
own decisions (initialize, updates, snapshots every 3 updates, a deleted share partition) is compacted by Kafka's
rule - per share partition its latest ShareSnapshot and the ShareUpdates after it, nothing of a deleted one - and
replaying the output gives the very same state as replaying the input; a per-key compaction (what the log cleaner
would do) would not (local[2])."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from coordinator.share.state_store import ShareStateStore, WriteState
from spark_jobs.common import JobError
from spark_jobs.share_state import kept_offsets, run
from storage import share_state_records
from storage.dump import iter_log_records
from storage.log import PartitionLog
from storage.share_state_records import StateBatch
from tests.support.spark import write_log

T = uuid.UUID(int=9)


def build_log(path: str) -> ShareStateStore:
    """The share coordinator's records for three share partitions, appended and replayed as the server does."""
    store = ShareStateStore(lambda _topic_id, _partition: True, updates_per_snapshot=3)
    batches = []
    offset = 0

    def apply(decision) -> None:
        nonlocal offset
        assert decision.answer.error.value == 0, decision.answer
        batch = []
        for key, value in decision.records:
            store.replay(offset, key, value)
            batch.append((*share_state_records.encode(key, value), 1_000 + offset))
            offset += 1
        batches.append(batch)

    for p in (0, 1, 2):
        apply(store.initialize("sg", T, p, 1, 0, 1_000))
    for i in range(8):  # partition 0: updates, a snapshot after every third
        apply(store.write(WriteState("sg", T, 0, 1, -1, i * 10, (StateBatch(i * 10, i * 10 + 4, 2, 1),)), 2_000))
    apply(store.write(WriteState("sg", T, 1, 1, -1, 5, (StateBatch(5, 9, 4, 2),)), 2_000))  # one update
    apply(store.delete("sg", T, 2))  # partition 2's state deleted: a tombstone
    write_log(path, batches, segment_bytes=600)  # several segments
    return store


def end_offset(path: str) -> int:
    """The log end offset of the log at `path`, opened as the share coordinator opens it."""
    async def go() -> int:
        log = PartitionLog.open(path, segment_bytes=1 << 20, flush_policy="none")
        try:
            return log.log_end_offset
        finally:
            await log.close()
    return asyncio.run(go())


def replayed(path: str) -> ShareStateStore:
    store = ShareStateStore(updates_per_snapshot=3)
    for offset, key, value in iter_log_records(path):
        store.replay(offset, share_state_records.decode_key(key), share_state_records.decode_value(
            share_state_records.decode_key(key), value)[1] if value is not None else None)
    return store


def test_the_compacted_log_replays_to_the_same_state(spark, tmp_path):
    src = tmp_path / "logs" / "__share_group_state-3"
    original = build_log(str(src))
    before = list(iter_log_records(str(src)))
    summary = run(["--input", str(tmp_path / "logs"), "--output", str(tmp_path / "out")], spark=spark)
    after = list(iter_log_records(str(tmp_path / "out" / "__share_group_state-3")))
    assert summary["records_read"] == len(before) and summary["records_kept"] == len(after) < len(before)
    again = replayed(str(tmp_path / "out" / "__share_group_state-3"))
    assert again.states == original.states and ("sg", T, 2) not in again.states
    kinds = [(share_state_records.decode_key(k).partition, type(share_state_records.decode_key(k)).__name__)
             for _o, k, _v in after]
    # partition 0: its last snapshot and the updates after it; 1: its snapshot and its update; 2: nothing
    last_snapshot = original.snapshot_offsets[("sg", T, 0)]
    assert [o for o, k, _v in after if share_state_records.decode_key(k).partition == 0][0] == last_snapshot
    assert sorted(set(kinds)) == [(0, "ShareSnapshotKey"), (0, "ShareUpdateKey"), (1, "ShareSnapshotKey"),
                                  (1, "ShareUpdateKey")]
    assert after[-1][0] <= before[-1][0] and [o for o, _k, _v in after] == sorted(o for o, _k, _v in after)

    assert end_offset(str(src)) == end_offset(str(tmp_path / "out" / "__share_group_state-3"))  # opens as a log

    with pytest.raises(JobError, match="already holds"):  # never over an earlier output
        run(["--input", str(tmp_path / "logs"), "--output", str(tmp_path / "out")], spark=spark)


def test_per_key_compaction_would_lose_updates():
    """The rule itself: two updates after a snapshot are both kept (the cleaner would keep the last only)."""
    def key(cls):
        return share_state_records.encode(cls("sg", T, 0), None)[0]

    snapshot, update = key(share_state_records.ShareSnapshotKey), key(share_state_records.ShareUpdateKey)
    records = [(0, snapshot, False), (1, update, False), (2, snapshot, False), (3, update, False),
               (4, update, False)]
    assert kept_offsets(records) == {2, 3, 4}
    assert kept_offsets([*records, (5, snapshot, True)]) == set()
