"""Issue 13 follow-up (red team a20, a03): a write to the offsets log larger than its batch limit
(Kafka: the offsets topic's max.message.bytes) fails alone with RecordTooLargeError, a group record
before it is encoded; any failure while batching (MemoryError) fails exactly the writes of that
batch, and the log keeps working."""

from __future__ import annotations

import pytest

from coordinator.records import log_codec
from coordinator.records.types import GroupMetadataRecord
from coordinator.runtime import durable_log
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.writes import PendingWrite
from storage.errors import RecordTooLargeError
from storage.records import GroupMetadataValue, MemberMetadata
from tests.support.offsets_log import batches_of, commits

pytestmark = pytest.mark.asyncio

LIMIT = 1048588  # Kafka's message.max.bytes default


async def open_log(tmp_path) -> DurableLog:
    durable = DurableLog(str(tmp_path), max_batch_bytes=LIMIT)
    durable.open_partition(0)
    return durable


def group_record(member_bytes: int, members: int = 2) -> GroupMetadataRecord:
    return GroupMetadataRecord("giant", GroupMetadataValue(
        protocol_type="consumer", generation=1, protocol="range", leader="m0", current_state_timestamp=0,
        members=tuple(MemberMetadata(member_id=f"m{i}", client_id="c", client_host="/h", session_timeout=10_000,
                                     rebalance_timeout=10_000, subscription=b"s" * member_bytes, assignment=b"a")
                      for i in range(members))))


async def test_a_commit_larger_than_the_batch_limit_fails_alone(tmp_path):
    durable = await open_log(tmp_path)
    ok = PendingWrite(commits("g", 0, 2))
    big = PendingWrite(commits("g" * 20_000, 0, 60))  # 60 records repeating a 20 kB group id: 1.2 MB
    for write in (ok, big):
        durable.append(0, write)
    await ok
    with pytest.raises(RecordTooLargeError):
        await big
    assert [len(b) for b in batches_of(durable, 0)] == [2]
    await durable.close()


async def test_a_group_record_past_the_limit_is_refused_before_encoding(tmp_path, monkeypatch):
    durable = await open_log(tmp_path)
    encoded = []
    real = log_codec.encode_tails
    monkeypatch.setattr(log_codec, "encode_tails", lambda records: encoded.append(records) or real(records))
    big = PendingWrite([group_record(LIMIT // 2 + 1)])
    small = PendingWrite([group_record(1000)])
    for write in (big, small):
        durable.append(0, write)
    await small
    with pytest.raises(RecordTooLargeError):
        await big
    assert encoded == [small.records]
    assert [len(b) for b in batches_of(durable, 0)] == [1]
    await durable.close()


async def test_a_failure_building_a_batch_fails_its_writes_and_the_log_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(durable_log, "BATCH_RECORDS", 3)
    durable = await open_log(tmp_path)
    real = durable_log.build_tail_batch
    calls = []

    def second_fails(tails, now):
        calls.append(len(tails))
        if len(calls) == 2:
            raise MemoryError()
        return real(tails, now)
    monkeypatch.setattr(durable_log, "build_tail_batch", second_fails)
    first, second, third = (PendingWrite(commits("g", 0, 3)) for _ in range(3))
    for write in (first, second, third):
        durable.append(0, write)
    await first
    with pytest.raises(MemoryError):
        await second  # its batch could not be built: it is answered, not lost in silence
    await third
    later = PendingWrite(commits("h", 0, 1))
    durable.append(0, later)
    await later
    assert [len(b) for b in batches_of(durable, 0)] == [3, 3, 1]
    await durable.close()


async def test_a_memory_error_encoding_one_write_fails_it_alone(tmp_path, monkeypatch):
    durable = await open_log(tmp_path)
    real = log_codec.encode_tails

    def no_memory_for_groups(records):
        if isinstance(records[0], GroupMetadataRecord):
            raise MemoryError()
        return real(records)
    monkeypatch.setattr(log_codec, "encode_tails", no_memory_for_groups)
    group, ok = PendingWrite([group_record(10)]), PendingWrite(commits("g", 0, 1))
    for write in (group, ok):
        durable.append(0, write)
    await ok
    with pytest.raises(MemoryError):
        await group
    await durable.close()
