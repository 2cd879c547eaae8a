"""Producer state with transactions (Kafka's ProducerStateManager / ProducerAppendInfo): ongoing transactions,
the transactional flag rules, markers (epochs, coordinator epochs), the last stable offset bounded by the
high watermark, the aborted list, and all of it rebuilt from a log holding transactional batches and markers."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.data_plane.producer_state import ProducerStateTable
from coordinator.data_plane.txn_state import AbortedTxn, TxnTracker
from coordinator.errors import InvalidProducerEpoch, InvalidTxnState, KafkaError, OutOfOrderSequence
from storage.batch import build_batch, iter_batches
from storage.control_records import build_marker_batch
from storage.log import PartitionLog


def data(table: ProducerStateTable, pid: int, epoch: int, seq: int, first: int, count: int = 1,
         txn: bool = True) -> None:
    """Validate and record a batch of `count` records at offsets [first, first + count)."""
    table.validate(pid, epoch, seq, seq + count - 1, txn)
    table.record(pid, epoch, seq, seq + count - 1, first, first + count - 1, 1000 + first, txn)
    table.txns.appended(100)


def marker(table: ProducerStateTable, pid: int, epoch: int, commit: bool, offset: int, coordinator_epoch: int = 0):
    table.check_marker(pid, epoch, coordinator_epoch)
    ended = table.apply_marker(pid, epoch, commit, coordinator_epoch, offset, 5000 + offset)
    table.txns.appended(70)
    return ended


def test_a_transactional_batch_begins_a_transaction_that_holds_the_lso():
    table = ProducerStateTable()
    data(table, 7, 0, 0, first=0, txn=False)  # idempotent, no transaction
    assert not table.has_ongoing(7) and table.txns.last_stable_offset(1, 0) == 1
    data(table, 7, 0, 1, first=1, count=2)
    data(table, 7, 0, 3, first=3)  # continues the same transaction
    assert table.has_ongoing(7) and table.entries[7].txn_first_offset == 1
    assert table.txns.open_first_offset() == 1
    assert table.txns.last_stable_offset(4, 0) == 1
    assert table.txns.last_stable_offset(1, 0) == 1 and table.txns.last_stable_offset(0, 0) == 0  # bounded by the HW
    assert table.txns.last_stable_offset(4, 2) == 2  # never below the log start offset


def test_a_non_transactional_batch_mid_transaction_is_refused():
    table = ProducerStateTable()
    data(table, 7, 0, 0, first=0)
    with pytest.raises(InvalidTxnState):
        table.validate(7, 0, 1, 1, False)
    data(table, 7, 0, 1, first=1)  # the transactional one is fine
    assert table.entries[7].txn_first_offset == 0


def test_commit_marker_moves_the_lso_only_once_the_marker_is_below_the_high_watermark():
    table = ProducerStateTable()
    data(table, 1, 0, 0, first=0, count=2)
    data(table, 2, 0, 0, first=2)             # a second producer's transaction begins at 2
    assert marker(table, 1, 0, True, offset=3)
    txns = table.txns
    assert not table.has_ongoing(1) and table.has_ongoing(2)
    assert txns.last_stable_offset(3, 0) == 0  # the marker (offset 3) is not durable yet
    assert txns.last_stable_offset(4, 0) == 2  # now producer 2's transaction holds it
    assert marker(table, 2, 0, True, offset=4)
    assert txns.last_stable_offset(5, 0) == 5 and txns.aborted == []
    assert table.entries[1].coordinator_epoch == 0 and table.entries[1].last_timestamp == 5003


def test_abort_marker_joins_the_aborted_list_and_a_marker_without_a_transaction_does_not():
    table = ProducerStateTable()
    data(table, 1, 0, 0, first=0, count=2)
    data(table, 2, 0, 0, first=2)
    assert marker(table, 1, 0, False, offset=3)
    assert table.txns.aborted == [AbortedTxn(1, 0, 3, 2)]  # LSO at completion: producer 2's first offset
    assert not marker(table, 1, 0, False, offset=4)   # nothing ongoing: the marker ends nothing
    assert marker(table, 2, 0, False, offset=5)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in table.txns.aborted] == [(1, 0, 3), (2, 2, 5)]


def test_markers_check_epochs_and_bump_them():
    table = ProducerStateTable()
    data(table, 1, 3, 0, first=0, count=2)
    table.check_marker(1, 3, 5)
    with pytest.raises(InvalidProducerEpoch):
        table.check_marker(1, 2, 5)
    marker(table, 1, 4, False, offset=2, coordinator_epoch=5)  # the coordinator bumped the epoch on abort
    entry = table.entries[1]
    assert (entry.epoch, entry.coordinator_epoch, entry.txn_first_offset, len(entry.batches)) == (4, 5, -1, 0)
    with pytest.raises(KafkaError) as fenced:
        table.check_marker(1, 4, 4)
    assert fenced.value.code == ErrorCode.transaction_coordinator_fenced
    with pytest.raises(InvalidProducerEpoch):
        table.validate(1, 3, 2, 2, True)  # the old epoch is fenced for data too
    with pytest.raises(OutOfOrderSequence):
        table.validate(1, 4, 2, 2, True)  # the bumped epoch's batches start at sequence 0
    table.validate(1, 4, 0, 0, True)


def test_a_marker_for_an_unknown_producer_creates_its_entry():
    table = ProducerStateTable()
    assert not marker(table, 9, 2, True, offset=0, coordinator_epoch=1)
    entry = table.entries[9]
    assert (entry.epoch, entry.coordinator_epoch, entry.last_seq, entry.last_timestamp) == (2, 1, -1, 5000)


def test_aborted_in_is_kafkas_collect_aborted_txns():
    txns = TxnTracker()
    txns.begin(1, 0)
    txns.complete(1, 0, 4, aborted=True)
    txns.begin(2, 5)
    txns.begin(3, 8)  # interleaved with producer 2's
    txns.complete(2, 5, 9, aborted=True)
    txns.complete(3, 8, 12, aborted=True)
    txns.begin(4, 20)
    txns.complete(4, 20, 30, aborted=True)
    assert [t.last_stable_offset for t in txns.aborted] == [5, 8, 13, 31]
    assert [t.producer_id for t in txns.aborted_in(0, 100)] == [1, 2, 3, 4]
    assert [t.producer_id for t in txns.aborted_in(5, 9)] == [2, 3]   # last >= 5 and first < 9
    assert [t.producer_id for t in txns.aborted_in(10, 20)] == [3]
    assert [t.producer_id for t in txns.aborted_in(13, 20)] == []
    txns.trim(10)
    assert [t.producer_id for t in txns.aborted] == [3, 4]


def test_stable_mark_counts_bytes_below_the_lso():
    txns = TxnTracker()
    txns.appended(100)
    txns.made_durable(100)
    assert txns.stable_mark(1) == 100
    txns.begin(1, 1)  # begins at byte mark 100
    txns.appended(50)
    txns.made_durable(50)
    assert txns.stable_mark(2) == 100
    txns.complete(1, 1, 2, aborted=False)
    txns.appended(70)
    assert txns.stable_mark(2) == 100   # the marker is not durable yet
    txns.made_durable(70)
    assert txns.stable_mark(3) == 220


async def test_rebuild_from_a_log_with_transactions_markers_and_an_open_one_at_the_end(tmp_path):
    lg = PartitionLog.open(str(tmp_path / "t-0"))

    def txn_batch(pid, epoch, seq, n=1, txn=True):
        return build_batch([(None, b"v%d" % i, 1000 + i) for i in range(n)], producer_id=pid, producer_epoch=epoch,
                           base_sequence=seq, is_transactional=txn)

    lg.append(build_batch([(None, b"plain", 1)]))                 # 0
    lg.append(txn_batch(1, 0, 0, 2))                             # 1-2: producer 1's transaction
    lg.append(txn_batch(2, 0, 0))                                # 3: producer 2's
    lg.append(build_marker_batch(1, 0, False, 3, 2000))          # 4: abort producer 1
    lg.append(txn_batch(3, 0, 0, txn=False))                     # 5: idempotent
    lg.append(build_marker_batch(2, 1, True, 3, 2001))           # 6: commit producer 2, epoch bumped
    lg.append(txn_batch(1, 1, 0))                                # 7: producer 1 again, open at the end
    await lg.append(txn_batch(1, 1, 1))                          # 8
    try:
        table = ProducerStateTable()
        assert table.rebuild(lg) == 7
        txns = table.txns
        assert [(t.producer_id, t.first_offset, t.last_offset) for t in txns.aborted] == [(1, 1, 4)]
        assert txns.last_stable_offset(lg.high_watermark, lg.log_start_offset) == 7
        assert table.has_ongoing(1) and not table.has_ongoing(2) and not table.has_ongoing(3)
        one, two = table.entries[1], table.entries[2]
        assert (one.epoch, one.txn_first_offset, one.last_seq, one.coordinator_epoch) == (1, 7, 1, 3)
        assert (two.epoch, two.coordinator_epoch, two.last_seq, two.last_timestamp) == (1, 3, -1, 2001)
        sizes = [b.size for b in iter_batches(lg.read(0))]
        assert txns.durable_bytes == txns.appended_bytes == sum(sizes)
        assert txns.stable_mark(lg.high_watermark) == sum(sizes[:6])  # up to the open transaction at offset 7
        with pytest.raises(InvalidTxnState):
            table.validate(1, 1, 2, 2, False)
    finally:
        await lg.close()
