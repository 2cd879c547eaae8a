"""Taking back a failed write (runtime/journal.py): every part a write changed, for the failed write and every
later one in flight, so that the shard's state is a replay of what is durable -- with a MemoryLog whose writes
fail on purpose, and with the real log: a write it refuses (too large) and a failed fsync."""

from __future__ import annotations

import asyncio
import errno

from kio.schema.errors import ErrorCode

from coordinator.errors import EarlierWriteFailed
from coordinator.groups.admin import describe_groups
from coordinator.groups.settings import GroupSettings
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from storage.errors import RecordTooLargeError, StorageError
from tests.support.consumer_groups import ConsumerHarness
from tests.support.groups import Harness
from tests.support.shard_state import observable, reload

E = ErrorCode
PID = 7000


def commit(group: str, partition: int, offset: int | None, metadata: str = "") -> OffsetCommitRecord:
    return OffsetCommitRecord(group, "t", partition, None if offset is None else OffsetValue(offset, metadata, 1))


def test_a_failed_commit_takes_back_the_simple_group_it_made():
    h = Harness()
    shard = h.shard("new")
    shard.write([commit("new", 0, 5)])
    assert h.coordinator.group("new") is not None  # an Empty group without protocol type (OffsetMetadataManager)
    h.log.fail(StorageError("disk"))
    assert h.coordinator.group("new") is None
    [described] = describe_groups(h.coordinator, ["new"])
    assert described.state == "Dead"


def test_a_consumer_group_made_over_a_simple_group_gives_it_back_when_its_write_fails():
    h = ConsumerHarness(auto_complete=False, offsets_partitions=1)
    h.shard().write([commit("g", 0, 5)])
    h.log.complete()
    simple = h.coordinator.group("g")
    assert simple is not None and not simple.protocol_type
    h.heartbeat()  # the consumer group's first records: its replay drops the simple group (Kafka replaces it)
    assert h.coordinator.group("g") is None and "g" in h.shard().consumer_groups
    h.log.fail(StorageError("disk"))
    assert h.coordinator.group("g") is simple and "g" not in h.shard().consumer_groups
    assert h.shard().offsets.get("g", "t", 0).offset == 5


def test_a_failed_write_takes_back_every_part_of_every_later_write():
    """Commits, a group's deletion, a consumer group's join and a new one, a transactional write and a COMMIT
    marker, all in flight behind a failed commit: the shard is as it was before the failed commit."""
    h = ConsumerHarness(auto_complete=False, offsets_partitions=1)
    shard = h.shard()
    shard.write([commit("c", 0, 1), commit("x", 0, 2), commit("k", 0, 3)])
    shard.txn.write(PID, 0, [commit("c", 1, 10), commit("c", 2, 11)])
    h.log.complete()
    h.heartbeat(group_id="k")
    h.log.complete()
    before = observable(shard)
    assert set(before["consumer"]) == {"k"} and set(before["classic"]) == {"c", "x"}

    failed = shard.write([commit("c", 0, 100)])
    later = [shard.write([commit("c", 2, 101), commit("c", 3, 102)])]
    results, deletion = shard.delete_groups(["x"])
    assert results == {"x": E.none} and deletion is not None
    later.append(deletion)
    h.heartbeat(group_id="k")  # a second member joins: the group's epoch and assignment move
    h.heartbeat(group_id="n")  # a new consumer group
    later.append(shard.txn.write(PID, 1, [commit("c", 3, 12)]))
    later.append(shard.txn.complete(PID, 1, True, 0))
    later.append(shard.write([commit("new", 0, 7)]))
    assert observable(shard) != before
    assert len(shard.inflight) == 8
    h.log.fail(StorageError("disk"))
    assert isinstance(failed.exception(), StorageError)
    assert all(isinstance(write.exception(), StorageError) for write in later)
    assert observable(shard) == before
    assert not shard.inflight and shard.offsets.durable_view("c") == {}


async def test_a_write_the_log_refuses_takes_the_later_ones_back_and_the_state_is_the_log(tmp_path):
    settings = GroupSettings(offsets_partitions=1)
    durable = DurableLog(str(tmp_path), fsync=lambda fd: None, max_batch_bytes=1 << 16)
    durable.open_partition(0)
    shard = GroupCoordinator(settings, FakeScheduler(), durable).shard_for("g")
    ok = shard.write([commit("g", 0, 1)])
    big = shard.write([commit("g", 1, 2, metadata="m" * 70_000)])  # past the offsets log's max.message.bytes
    later = shard.write([commit("g", 0, 3), commit("h", 0, 4)])
    assert shard.offsets.get("g", "t", 0).offset == 3
    await durable.flush()
    assert ok.exception() is None
    assert isinstance(big.exception(), RecordTooLargeError)
    assert isinstance(later.exception(), EarlierWriteFailed)  # never written: retriable
    assert shard.offsets.get("g", "t", 0).offset == 1 and "h" not in shard.groups
    after = shard.write([commit("g", 2, 5)])  # the log goes on
    await durable.flush()
    assert after.exception() is None
    assert observable(shard) == observable(await reload(durable, 0, settings))
    await durable.close()


async def test_a_failed_fsync_fails_every_write_in_flight_and_the_state_is_the_log(tmp_path):
    """The log fails the flush's appends and every later one, and cuts itself back to its last good position
    (storage/log_repair.py); the shard takes back the same writes."""
    failing = []

    def fsync(fd: int) -> None:
        if failing:
            raise OSError(errno.ENOSPC, "No space left on device")

    settings = GroupSettings(offsets_partitions=1)
    durable = DurableLog(str(tmp_path), fsync=fsync)
    durable.open_partition(0)
    plog = durable.logs[0]
    shard = GroupCoordinator(settings, FakeScheduler(), durable).shard_for("g")
    durable_one = shard.write([commit("g", 0, 1)])
    await durable.flush()
    assert durable_one.exception() is None
    failing.append(True)
    first = shard.write([commit("g", 0, 2), commit("g", 1, 2)])
    await asyncio.sleep(0)  # appended: its flush starts
    second = shard.write([commit("g", 1, 3), commit("other", 0, 3)])
    await durable.flush()
    assert isinstance(first.exception(), StorageError) and isinstance(second.exception(), StorageError)
    assert shard.offsets.get("g", "t", 0).offset == 1 and shard.offsets.get("g", "t", 1) is None
    assert "other" not in shard.groups
    failing.clear()
    for _ in range(1000):  # the log repairs itself on the loop (a flush executor job): a few turns
        if plog._failed is None and plog._repairing is None:
            break
        await asyncio.sleep(0.01)
    assert plog._failed is None
    third = shard.write([commit("g", 1, 4)])
    await durable.flush()
    assert third.exception() is None
    assert observable(shard) == observable(await reload(durable, 0, settings))
    await durable.close()
