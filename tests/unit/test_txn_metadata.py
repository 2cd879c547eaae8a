"""TxnState (Kafka's ids, names, valid previous states) and TxnMetadata's prepare/complete transitions."""

from __future__ import annotations

import pytest

from coordinator.transactions.lifecycle import TxnState
from coordinator.transactions.txn_metadata import TxnMetadata, TxnStateError, TxnTransit
from storage.txn_log_records import TxnLogValue, TxnPartitions

S = TxnState


def test_state_ids_and_names_are_kafkas() -> None:
    assert [(s.value, s.name) for s in TxnState] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    assert TxnState.from_kafka_name("PrepareEpochFence") is S.PREPARE_EPOCH_FENCE
    assert TxnState.from_kafka_name("EMPTY") is None
    assert TxnState["ONGOING"] is S.ONGOING  # the Python member names still work


def test_valid_previous_states_are_kafkas() -> None:
    expected = {
        S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.PREPARE_COMMIT: {S.ONGOING},
        S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
        S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
        S.COMPLETE_ABORT: {S.PREPARE_ABORT},
        S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
        S.PREPARE_EPOCH_FENCE: {S.ONGOING},
    }
    assert {s: set(s.valid_previous_states) for s in TxnState} == expected
    assert {s for s in TxnState if s.expiration_allowed} == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}


def fresh(epoch: int = -1, state: TxnState = S.EMPTY) -> TxnMetadata:
    return TxnMetadata("t", 7, producer_epoch=epoch, txn_timeout_ms=1000, state=state, txn_last_update_ms=1)


def test_a_whole_commit_cycle_through_prepare_and_complete() -> None:
    md = fresh()
    t = md.prepare_increment_producer_epoch(1000, None, now_ms=10)
    assert t is not None and (t.state, t.producer_epoch, t.last_producer_epoch) == (S.EMPTY, 0, -1)
    assert md.pending_state is S.EMPTY and md.producer_epoch == -1  # nothing changes before completion
    md.complete_transition(t)
    assert (md.state, md.producer_epoch, md.pending_state, md.txn_last_update_ms) == (S.EMPTY, 0, None, 10)

    t = md.prepare_add_partitions({("a", 0)}, now_ms=20)
    md.complete_transition(t)
    assert (md.state, md.partitions, md.txn_start_ms) == (S.ONGOING, {("a", 0)}, 20)
    t = md.prepare_add_partitions({("b", 1)}, now_ms=30)
    md.complete_transition(t)
    assert md.partitions == {("a", 0), ("b", 1)} and md.txn_start_ms == 20  # the start stays

    t = md.prepare_abort_or_commit(S.PREPARE_COMMIT, now_ms=40)
    md.complete_transition(t)
    assert (md.state, md.partitions, md.txn_last_update_ms) == (S.PREPARE_COMMIT, {("a", 0), ("b", 1)}, 40)
    t = md.prepare_complete(now_ms=50)
    assert t.state is S.COMPLETE_COMMIT and t.partitions == frozenset()
    md.complete_transition(t)
    assert (md.state, md.partitions, md.txn_start_ms, md.producer_epoch) == (S.COMPLETE_COMMIT, set(), 20, 0)

    t = md.prepare_add_partitions({("c", 2)}, now_ms=60)  # the next transaction starts afresh
    md.complete_transition(t)
    assert (md.state, md.partitions, md.txn_start_ms) == (S.ONGOING, {("c", 2)}, 60)
    t = md.prepare_abort_or_commit(S.PREPARE_ABORT, now_ms=70)
    md.complete_transition(t)
    md.complete_transition(md.prepare_complete(now_ms=80))
    assert md.state is S.COMPLETE_ABORT
    md.complete_transition(md.prepare_increment_producer_epoch(1000, None, now_ms=90))  # type: ignore[arg-type]
    assert (md.state, md.producer_epoch) == (S.EMPTY, 1)


def test_a_second_prepare_while_pending_is_a_bug() -> None:
    md = fresh(epoch=0)
    md.prepare_add_partitions({("a", 0)}, 1)
    with pytest.raises(TxnStateError):
        md.prepare_add_partitions({("a", 1)}, 2)
    md.reset_pending()
    md.prepare_add_partitions({("a", 1)}, 2)


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.PREPARE_COMMIT])
def test_prepare_commit_only_from_ongoing(state: TxnState) -> None:
    with pytest.raises(TxnStateError):
        fresh(0, state).prepare_abort_or_commit(S.PREPARE_COMMIT, 1)


def test_epoch_fence_bumps_once_and_not_again_after_a_failed_fence() -> None:
    md = fresh(5, S.ONGOING)
    t = md.prepare_fence_producer_epoch()
    assert (t.state, t.producer_epoch, t.last_producer_epoch) == (S.PREPARE_EPOCH_FENCE, 6, -1)
    md.reset_pending()
    md.has_failed_epoch_fence = True
    md.producer_epoch = 6
    assert md.prepare_fence_producer_epoch().producer_epoch == 6
    with pytest.raises(TxnStateError):  # PrepareEpochFence is never completed
        md.complete_transition(md.pending_transit)  # type: ignore[arg-type]


def test_kip360_expected_epoch_cases() -> None:
    md = fresh(3)
    md.last_producer_epoch = 2
    t = md.prepare_increment_producer_epoch(1000, 3, 1)
    assert t is not None and (t.producer_epoch, t.last_producer_epoch) == (4, 3)
    md.reset_pending()
    t = md.prepare_increment_producer_epoch(1000, 2, 1)  # a retry of the bump that made epoch 3
    assert t is not None and (t.producer_epoch, t.last_producer_epoch) == (3, 2)
    md.reset_pending()
    assert md.prepare_increment_producer_epoch(1000, 1, 1) is None  # fenced
    assert md.pending_state is None


def test_exhausted_epoch_cannot_be_bumped_but_the_id_rotates() -> None:
    md = fresh(32766)
    assert md.epoch_exhausted
    with pytest.raises(TxnStateError):
        md.prepare_increment_producer_epoch(1000, None, 1)
    t = md.prepare_producer_id_rotation(99, 1000, 5, record_last_epoch=True)
    md.complete_transition(t)
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch, md.previous_producer_id) == (99, 0, 32766, 7)


def test_remove_partition_only_while_preparing() -> None:
    md = fresh(0)
    md.complete_transition(md.prepare_add_partitions({("a", 0), ("a", 1)}, 1))
    with pytest.raises(TxnStateError):
        md.remove_partition(("a", 0))
    md.complete_transition(md.prepare_abort_or_commit(S.PREPARE_ABORT, 2))
    md.remove_partition(("a", 0))
    assert md.partitions == {("a", 1)}


def test_complete_rejects_a_transit_that_is_not_the_pending_one() -> None:
    md = fresh(0)
    md.prepare_add_partitions({("a", 0)}, 1)
    other = TxnTransit(7, 7, -1, 1, -1, 1000, S.ONGOING, frozenset({("a", 0)}), 1, 1)  # wrong epoch
    with pytest.raises(TxnStateError):
        md.complete_transition(other)


def test_to_value_and_from_value() -> None:
    md = fresh(0)
    t = md.prepare_add_partitions({("b", 2), ("a", 1), ("a", 0)}, now_ms=55)
    value = t.to_value()
    assert value == TxnLogValue(
        producer_id=7, producer_epoch=0, transaction_timeout_ms=1000, transaction_status=1,
        transaction_partitions=(TxnPartitions("a", (0, 1)), TxnPartitions("b", (2,))),
        transaction_last_update_timestamp_ms=55, transaction_start_timestamp_ms=55)
    loaded = TxnMetadata.from_value("t", value)
    assert (loaded.state, loaded.partitions, loaded.producer_epoch, loaded.txn_start_ms, loaded.pending_state) == (
        S.ONGOING, {("a", 0), ("a", 1), ("b", 2)}, 0, 55, None)
    empty = fresh(-1).prepare_increment_producer_epoch(1000, None, 3)
    assert empty is not None and empty.to_value().transaction_partitions is None  # Kafka writes null for Empty
    assert TxnMetadata.to_value(empty) == empty.to_value()
