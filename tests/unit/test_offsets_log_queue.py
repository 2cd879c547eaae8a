"""DurableLog joins the writes of one loop turn: one append per partition, a write never split."""

from __future__ import annotations

import asyncio
import struct

import pytest

from coordinator.groups.settings import GroupSettings
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime import durable_log
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import PendingWrite
from storage.errors import RecordTooLargeError
from tests.support.offsets_log import batches_of, commits

pytestmark = pytest.mark.asyncio


async def open_log(tmp_path) -> DurableLog:
    durable = DurableLog(str(tmp_path))
    durable.open_partition(0)
    return durable


async def test_writes_of_one_turn_share_one_append_and_never_span_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(durable_log, "BATCH_RECORDS", 10)
    durable = await open_log(tmp_path)
    appends = []
    plog = durable.logs[0]
    real_append = plog.append
    monkeypatch.setattr(plog, "append", lambda data, **kw: appends.append(data) or real_append(data, **kw))
    writes = [PendingWrite(commits("g", 0, n)) for n in (4, 4, 4, 12, 1)]
    for write in writes:
        durable.append(0, write)
    assert durable.has_queued(0) and not appends  # nothing reaches the log before the turn ends
    for write in writes:
        await write
    assert len(appends) == 1
    # 4+4 fit in 10; the third would overflow it; 12 alone exceeds it but is one write; 1 follows
    assert [len(b) for b in batches_of(durable, 0)] == [8, 4, 12, 1]
    await durable.close()


@pytest.mark.parametrize("policy, turns", [("none", 1), ("fsync", None)])
async def test_with_flush_policy_none_a_turns_writes_are_settled_on_the_turn_they_are_appended(tmp_path, policy,
                                                                                                  turns):
    """Flush policy none: the turn after the writes, their append, its write to the file and their settling happen
    together (one loop turn, not three: a commit answered one at a time waited for each). With fsync they wait for
    the worker thread's fsync as before."""
    durable = DurableLog(str(tmp_path), flush_policy=policy)
    durable.open_partition(0)
    writes = [PendingWrite(commits("g", 0, 3)), PendingWrite(commits("h", 0, 2))]
    for write in writes:
        durable.append(0, write)
    await asyncio.sleep(0)  # the turn that appends what was queued
    if turns == 1:
        assert all(w.done() and w.exception() is None for w in writes)
        assert durable.logs[0].high_watermark == 5
    else:
        assert not any(w.done() for w in writes)
        for write in writes:
            await write
    assert [len(b) for b in batches_of(durable, 0)] == [5]
    await durable.close()


async def test_a_write_that_cannot_be_encoded_fails_alone(tmp_path):
    durable = await open_log(tmp_path)
    ok1, bad, ok2 = (PendingWrite(commits("g", 0, 2)), PendingWrite(commits("g" * 40_000, 0, 1)),
                     PendingWrite(commits("h", 5, 1)))
    for write in (ok1, bad, ok2):
        durable.append(0, write)
    await ok1
    await ok2
    with pytest.raises(RecordTooLargeError):
        await bad
    assert [len(b) for b in batches_of(durable, 0)] == [3]
    await durable.close()


async def test_close_appends_what_is_queued(tmp_path):
    durable = await open_log(tmp_path)
    write = PendingWrite(commits("g", 0, 3))
    durable.append(0, write)
    await durable.close()
    assert write.done() and write.exception() is None
    reopened = await open_log(tmp_path)
    assert [len(b) for b in batches_of(reopened, 0)] == [3]
    await reopened.close()


async def test_a_write_failed_while_queued_is_not_appended(tmp_path):
    durable = await open_log(tmp_path)
    coordinator = GroupCoordinator(GroupSettings(offsets_partitions=1), FakeScheduler(), durable, owned=[0])
    [shard] = coordinator.owned_shards()
    shard.set_state(shard.state.ACTIVE)
    write = shard.write(commits("g", 0, 2))
    shard.unload()  # fails the write before the turn ends
    assert write.done() and write.exception() is not None
    kept = PendingWrite(commits("g", 9, 1))
    durable.append(0, kept)
    await kept
    assert [len(b) for b in batches_of(durable, 0)] == [1]
    await durable.close()


async def test_writes_to_a_closed_partition_fail(tmp_path):
    durable = await open_log(tmp_path)
    write = PendingWrite(commits("g", 0, 1))
    durable.append(0, write)
    await durable.close_partition(0)
    assert write.done() and write.exception() is None  # queued before the close: appended by it
    late = PendingWrite(commits("g", 0, 1))
    durable.append(0, late)
    assert late.done() and late.exception() is not None


async def test_a_write_with_a_number_out_of_range_fails_alone(tmp_path):
    durable = await open_log(tmp_path)
    bad = PendingWrite([OffsetCommitRecord("g", "t", 2**40, OffsetValue(1, "", 2))])  # partition beyond int32
    ok = PendingWrite(commits("g", 0, 1))
    durable.append(0, bad)
    durable.append(0, ok)
    await asyncio.wait_for(durable.flush(), 10)
    assert bad.done() and isinstance(bad.exception(), struct.error)
    assert ok.done() and ok.exception() is None
    await durable.close()
