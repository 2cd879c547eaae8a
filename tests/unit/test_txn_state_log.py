"""TxnStateLog: the __transaction_state logs' appends, their load (latest value per transactional id,
tombstones), reopening after a restart, and compaction of closed segments."""

from __future__ import annotations

import os

import pytest

from coordinator.transactions.runtime.state_log import TxnStateLog
from storage.batch import iter_batches
from storage.log_compaction import CompactionPolicy
from storage.txn_log_records import TxnLogValue, TxnPartitions, decode_txn_key

pytestmark = pytest.mark.asyncio


def value(epoch: int, status: int = 1, partitions=(("t", (0, 1)),)) -> TxnLogValue:
    return TxnLogValue(producer_id=7, producer_epoch=epoch, transaction_timeout_ms=60_000, transaction_status=status,
                       transaction_partitions=tuple(TxnPartitions(t, p) for t, p in partitions),
                       transaction_last_update_timestamp_ms=1000 + epoch, transaction_start_timestamp_ms=1000)


async def test_load_gives_the_latest_value_of_each_id_across_a_reopen(tmp_path):
    logs = TxnStateLog(str(tmp_path), flush_policy="none")
    logs.open(3)
    for epoch in range(3):
        await logs.append(3, "a", value(epoch))
    await logs.append(3, "b", value(0))
    await logs.append(3, "c", value(0))
    await logs.append(3, "c", None)  # expired: a tombstone
    await logs.close_all()
    assert os.path.isdir(tmp_path / "__transaction_state-3")
    again = TxnStateLog(str(tmp_path))
    loaded = await again.load(3)
    assert loaded == {"a": value(2), "b": value(0), "c": None}
    await again.close_all()


async def test_an_append_to_a_partition_not_hosted_raises(tmp_path):
    logs = TxnStateLog(str(tmp_path))
    with pytest.raises(LookupError):
        logs.append(0, "a", value(0))


async def test_compaction_keeps_only_the_latest_record_per_id_in_closed_segments(tmp_path):
    logs = TxnStateLog(str(tmp_path), flush_policy="none", segment_bytes=1024)
    log_ = logs.open(0)
    for epoch in range(40):
        await logs.append(0, "same", value(epoch))
    await logs.append(0, "other", value(1))
    assert len(log_.segments) > 2
    before = sum(s.size for s in log_.segments)
    assert await logs.compact(now_ms=10**13, policy=CompactionPolicy(min_cleanable_dirty_ratio=0.0)) == 1
    after = sum(s.size for s in log_.segments)
    assert after < before / 2
    closed = [decode_txn_key(r.key).transactional_id for seg in log_.segments[:-1]
              for b in iter_batches(open(seg.log_path, "rb").read()) for r in _records(b)]
    assert closed.count("same") <= 1  # at most the latest of the closed range (a later one may be in the active)
    assert await logs.load(0) == {"same": value(39), "other": value(1)}
    await logs.close_all()


def _records(batch):
    from storage.batch import decode_records

    return decode_records(batch)
