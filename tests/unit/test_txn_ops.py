"""TxnOps: InitProducerId, AddPartitionsToTxn and EndTxn as Kafka 3.9's TransactionCoordinator answers them."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode as E

from coordinator.errors import ProducerIdsUnavailable
from coordinator.transactions.lifecycle import TxnState as S
from coordinator.transactions.operations import TxnSettings
from coordinator.transactions.steps import client_error, map_append_error
from tests.support.txn import Harness

# --- InitProducerId -----------------------------------------------------------------------------

def test_new_id_gets_a_new_producer_id_and_epoch_0_written_as_empty() -> None:
    h = Harness()
    answer = h.init("t", timeout_ms=5000)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (E.none, 1000, 0)
    md = h.md("t")
    assert (md.state, md.producer_epoch, md.txn_timeout_ms, md.pending_state) == (S.EMPTY, 0, 5000, None)
    [(txn_id, value)] = h.log
    assert txn_id == "t" and value is not None
    assert (value.producer_id, value.producer_epoch, value.transaction_status, value.transaction_timeout_ms) == (
        1000, 0, 0, 5000)


def test_same_id_again_bumps_the_epoch_and_keeps_the_producer_id() -> None:
    h = Harness()
    h.init("t")
    answer = h.init("t", timeout_ms=7000)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (E.none, 1000, 1)
    assert h.md("t").txn_timeout_ms == 7000


@pytest.mark.parametrize("timeout", [0, -1, 900001])
def test_timeout_out_of_bounds(timeout: int) -> None:
    h = Harness()
    assert h.init("t", timeout_ms=timeout).error == E.invalid_transaction_timeout
    assert "t" not in h.ops.txns


def test_timeout_bound_is_the_setting() -> None:
    h = Harness(TxnSettings(max_timeout_ms=1000))
    assert h.init("t", timeout_ms=1001).error == E.invalid_transaction_timeout
    assert h.init("t", timeout_ms=1000).error == E.none


def test_empty_id_and_half_given_expected_pid_are_invalid_requests() -> None:
    h = Harness()
    assert h.init("").error == E.invalid_request
    assert h.init("t", expected_pid=5).error == E.invalid_request


def test_producer_id_unavailable_answers_the_allocators_error() -> None:
    h = Harness()
    assert h.drive(h.ops.init_producer_id("t", 1000, new_producer_id=lambda: None)).error \
        == E.coordinator_load_in_progress

    def boom() -> int:
        raise ProducerIdsUnavailable("no block")

    assert h.drive(h.ops.init_producer_id("t", 1000, new_producer_id=boom)).error == E.coordinator_load_in_progress
    assert "t" not in h.ops.txns


def test_init_with_ongoing_transaction_fences_aborts_and_answers_concurrent_transactions() -> None:
    h = Harness()
    pid, epoch = h.begin("t", ("a", 0), ("b", 1))
    step = h.ops.init_producer_id("t", 60000, new_producer_id=h.new_pid)
    assert step.record is not None and step.record.transaction_status == S.PREPARE_ABORT
    assert step.record.producer_epoch == epoch + 1  # the fenced epoch goes into the abort
    answer = h.drive(step)
    assert answer.error == E.concurrent_transactions and answer.producer_id == -1
    md = h.md("t")
    assert (md.state, md.producer_epoch, md.pending_state) == (S.PREPARE_ABORT, epoch + 1, S.COMPLETE_ABORT)
    job = step.markers
    assert job is not None and (job.commit, job.producer_epoch, job.partitions) == (
        False, epoch + 1, frozenset({("a", 0), ("b", 1)}))
    # while the markers are out: the retry waits
    assert h.init("t").error == E.concurrent_transactions
    h.send_markers(job)
    assert (md.state, md.pending_state, md.partitions) == (S.COMPLETE_ABORT, None, set())
    answer = h.init("t")  # the retry bumps once more
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (E.none, pid, epoch + 2)
    # the old producer is fenced
    assert h.end("t", pid, epoch, commit=True)[0].error == E.producer_fenced


def test_init_while_prepare_commit_answers_concurrent_transactions() -> None:
    h = Harness()
    pid, epoch = h.begin()
    h.end("t", pid, epoch, commit=True, markers=False)
    assert h.init("t").error == E.concurrent_transactions
    h.md("t").reset_pending()  # even without a pending transition (markers lost): PrepareCommit waits
    assert h.init("t").error == E.concurrent_transactions


def test_kip360_retry_with_expected_epoch() -> None:
    h = Harness()
    first = h.init("t")
    second = h.init("t", expected_pid=first.producer_id, expected_epoch=first.producer_epoch)
    assert (second.error, second.producer_epoch) == (E.none, 1)
    assert h.md("t").last_producer_epoch == 0
    # the answer was lost: the same request again answers the same epoch (no second bump)
    again = h.init("t", expected_pid=first.producer_id, expected_epoch=first.producer_epoch)
    assert (again.error, again.producer_id, again.producer_epoch) == (E.none, first.producer_id, 1)
    # a stale epoch is fenced, a wrong producer id too
    assert h.init("t", expected_pid=first.producer_id, expected_epoch=5).error == E.producer_fenced
    assert h.init("t", expected_pid=4242, expected_epoch=1).error == E.producer_fenced
    # a new producer (no expected id) resets the last epoch: the old one's retry is fenced now
    h.init("t")
    assert h.init("t", expected_pid=first.producer_id, expected_epoch=0).error == E.producer_fenced


def test_kip360_expected_pid_for_a_new_metadata_is_accepted() -> None:
    h = Harness()  # a producer recovering from UNKNOWN_PRODUCER_ID after the id expired
    answer = h.init("t", expected_pid=77, expected_epoch=3)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (E.none, 1000, 0)


def test_epoch_exhaustion_rotates_to_a_new_producer_id() -> None:
    h = Harness()
    h.init("t")
    md = h.md("t")
    md.producer_epoch = 32766
    answer = h.init("t")
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (E.none, 1001, 0)
    assert (md.producer_id, md.previous_producer_id, md.last_producer_epoch) == (1001, 1000, -1)


def test_epoch_exhaustion_with_expected_epoch_records_the_last_and_accepts_the_retry() -> None:
    h = Harness()
    h.init("t")
    h.md("t").producer_epoch = 32766
    answer = h.init("t", expected_pid=1000, expected_epoch=32766)
    assert (answer.producer_id, answer.producer_epoch) == (1001, 0)
    assert h.md("t").last_producer_epoch == 32766
    retry = h.init("t", expected_pid=1000, expected_epoch=32766)  # previous id with an exhausted epoch
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.none, 1001, 0)


def test_init_write_failure_answers_the_mapped_error_and_keeps_the_state() -> None:
    h = Harness()
    h.init("t")
    before = h.md("t").logged_fields()
    assert h.init("t", error=E.not_leader_or_follower).error == E.not_coordinator
    assert h.init("t", error=E.request_timed_out).error == E.coordinator_not_available
    assert h.md("t").logged_fields() == before and h.md("t").pending_state is None
    assert h.init("t").producer_epoch == 1


# --- AddPartitionsToTxn --------------------------------------------------------------------------

def test_add_partitions_starts_the_transaction_and_adds_more() -> None:
    h = Harness()
    a = h.init("t")
    h.clock.advance(5)
    assert h.add("t", a.producer_id, 0, ("x", 0)).error == E.none
    md = h.md("t")
    assert (md.state, md.partitions, md.txn_start_ms) == (S.ONGOING, {("x", 0)}, h.clock.now)
    records = len(h.log)
    assert h.add("t", a.producer_id, 0, ("x", 0)).error == E.none  # already there: no write
    assert len(h.log) == records
    h.clock.advance(5)
    assert h.add("t", a.producer_id, 0, ("y", 3)).error == E.none
    assert md.partitions == {("x", 0), ("y", 3)} and md.txn_start_ms == h.clock.now - 5


def test_add_partitions_errors() -> None:
    h = Harness()
    pid, epoch = h.begin()
    assert h.add("nope", pid, epoch, ("x", 0)).error == E.invalid_producer_id_mapping
    assert h.add("t", pid + 1, epoch, ("x", 0)).error == E.invalid_producer_id_mapping
    assert h.add("t", pid, epoch - 1 if epoch else 5, ("x", 0)).error == E.producer_fenced
    assert h.add("", pid, epoch, ("x", 0)).error == E.invalid_request
    h.end("t", pid, epoch, commit=True, markers=False)
    assert h.add("t", pid, epoch, ("x", 0)).error == E.concurrent_transactions  # PrepareCommit
    assert client_error(E.producer_fenced, "AddPartitionsToTxn", 1) == E.invalid_producer_epoch
    assert client_error(E.producer_fenced, "AddPartitionsToTxn", 2) == E.producer_fenced
    assert client_error(E.producer_fenced, "InitProducerId", 3) == E.invalid_producer_epoch


def test_add_partitions_pending_answers_concurrent_transactions() -> None:
    h = Harness()
    pid, epoch = h.begin()
    step = h.ops.add_partitions("t", pid, epoch, [("y", 1)])
    assert h.add("t", pid, epoch, ("z", 1)).error == E.concurrent_transactions
    assert h.end("t", pid, epoch, commit=True)[0].error == E.concurrent_transactions
    assert h.drive(step).error == E.none


def test_add_partitions_write_failure_leaves_the_transaction_as_before() -> None:
    h = Harness()
    pid, epoch = h.begin("t", ("x", 0))
    before = h.md("t").logged_fields()
    assert h.add("t", pid, epoch, ("y", 1), error=E.kafka_storage_error).error == E.not_coordinator
    assert h.md("t").logged_fields() == before and h.md("t").pending_state is None
    assert h.add("t", pid, epoch, ("y", 1)).error == E.none


def test_verify_only_checks_without_writing() -> None:
    h = Harness()
    pid, epoch = h.begin("t", ("x", 0))
    records = len(h.log)
    step = h.ops.add_partitions("t", pid, epoch, [("x", 0), ("y", 1)], verify_only=True)
    assert not step.needs_write and step.error == E.none
    assert step.partition_errors == {("x", 0): E.none, ("y", 1): E.transaction_abortable}
    fenced = h.ops.add_partitions("t", pid, epoch + 1, [("x", 0)], verify_only=True)
    assert fenced.error == E.producer_fenced and fenced.partition_errors == {("x", 0): E.producer_fenced}
    unknown = h.ops.add_partitions("u", pid, epoch, [("x", 0)], verify_only=True)
    assert unknown.partition_errors == {("x", 0): E.invalid_producer_id_mapping}
    h.end("t", pid, epoch, commit=False, markers=False)
    assert h.ops.add_partitions("t", pid, epoch, [("x", 0)], verify_only=True).error == E.concurrent_transactions
    assert len(h.log) == records + 1  # only the PrepareAbort


# --- EndTxn ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_prepares_sends_markers_and_completes(commit: bool) -> None:
    h = Harness(coordinator_epoch=3)
    pid, epoch = h.begin("t", ("a", 0), ("b", 2))
    answer, step = h.end("t", pid, epoch, commit, markers=False)
    assert answer.error == E.none
    prepare = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
    assert h.log[-1][1] is not None and h.log[-1][1].transaction_status == prepare
    job = step.markers
    assert job is not None and (job.producer_id, job.producer_epoch, job.commit, job.coordinator_epoch) == (
        pid, epoch, commit, 3)
    md = h.md("t")
    assert (md.state, md.pending_state) == (prepare, S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert h.send_markers(job) is not None
    assert [m[:2] for m in h.markers] == [("a", 0), ("b", 2)]
    complete = h.log[-1][1]
    assert complete is not None and complete.transaction_status == (4 if commit else 5)
    assert complete.transaction_partitions == ()
    assert (md.state, md.partitions, md.pending_state) == (
        S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT, set(), None)


def test_end_txn_retries_and_invalid_states() -> None:
    h = Harness()
    pid, epoch = h.begin()
    assert h.end("t", pid, epoch, commit=True, markers=False)[0].error == E.none
    assert h.end("t", pid, epoch, commit=True)[0].error == E.concurrent_transactions  # markers out
    assert h.end("t", pid, epoch, commit=False)[0].error == E.concurrent_transactions  # pending first
    h.md("t").reset_pending()
    assert h.end("t", pid, epoch, commit=False)[0].error == E.invalid_txn_state  # PrepareCommit, abort
    h2 = Harness()
    pid, epoch = h2.begin()
    h2.end("t", pid, epoch, commit=True)
    records = len(h2.log)
    assert h2.end("t", pid, epoch, commit=True)[0].error == E.none  # a retried commit after CompleteCommit
    assert h2.end("t", pid, epoch, commit=False)[0].error == E.invalid_txn_state
    assert len(h2.log) == records
    h3 = Harness()
    pid, epoch = h3.begin()
    h3.end("t", pid, epoch, commit=False)
    assert h3.end("t", pid, epoch, commit=False)[0].error == E.none
    assert h3.end("t", pid, epoch, commit=True)[0].error == E.invalid_txn_state
    a = h3.init("e")
    assert h3.end("e", a.producer_id, a.producer_epoch, commit=True)[0].error == E.invalid_txn_state  # Empty


def test_end_txn_identity_errors() -> None:
    h = Harness()
    pid, epoch = h.begin()
    assert h.end("nope", pid, epoch, True)[0].error == E.invalid_producer_id_mapping
    assert h.end("t", pid + 1, epoch, True)[0].error == E.invalid_producer_id_mapping
    assert h.end("t", pid, epoch + 1, True)[0].error == E.producer_fenced  # clients: strict equality
    assert h.end("", pid, epoch, True)[0].error == E.invalid_request
    assert client_error(E.producer_fenced, "EndTxn", 1) == E.invalid_producer_epoch


def test_end_txn_write_failure_resets_and_a_retry_succeeds() -> None:
    h = Harness()
    pid, epoch = h.begin()
    answer, step = h.end("t", pid, epoch, commit=True, error=E.not_enough_replicas)
    assert answer.error == E.coordinator_not_available and step.markers is None
    md = h.md("t")
    assert (md.state, md.pending_state) == (S.ONGOING, None)
    assert h.end("t", pid, epoch, commit=True)[0].error == E.none
    assert md.state == S.COMPLETE_COMMIT


def test_completion_write_unavailable_is_retried_with_the_same_record() -> None:
    h = Harness()
    pid, epoch = h.begin()
    _, step = h.end("t", pid, epoch, commit=True, markers=False)
    job = step.markers
    assert job is not None
    done = job.complete()
    assert done is not None and done.record is not None
    assert done.written(E.request_timed_out).error == E.coordinator_not_available
    assert done.retry and h.md("t").pending_state == S.COMPLETE_COMMIT  # still pending: the retry comes
    assert h.drive(done).error == E.none
    assert h.md("t").state == S.COMPLETE_COMMIT


def test_completion_write_not_coordinator_drops_the_pending_state() -> None:
    h = Harness()
    pid, epoch = h.begin()
    _, step = h.end("t", pid, epoch, commit=True, markers=False)
    assert step.markers is not None
    done = step.markers.complete()
    assert done is not None
    assert done.written(E.not_leader_or_follower).error == E.not_coordinator and not done.retry
    md = h.md("t")
    assert (md.state, md.pending_state) == (S.PREPARE_COMMIT, None)  # waits for a reload


def test_marker_job_given_up_writes_nothing() -> None:
    h = Harness()
    pid, epoch = h.begin()
    _, step = h.end("t", pid, epoch, commit=False, markers=False)
    assert step.markers is not None and step.markers.complete(markers_done=False) is None
    assert h.md("t").state == S.PREPARE_ABORT


def test_a_step_settles_once() -> None:
    h = Harness()
    step = h.ops.init_producer_id("t", 1000, new_producer_id=h.new_pid)
    h.drive(step)
    with pytest.raises(RuntimeError):
        step.written(None)


def test_append_error_mapping_is_kafkas() -> None:
    assert map_append_error(None) == E.none
    assert map_append_error(E.unknown_topic_or_partition) == E.coordinator_not_available
    assert map_append_error(E.not_enough_replicas_after_append) == E.coordinator_not_available
    assert map_append_error(E.kafka_storage_error) == E.not_coordinator
    assert map_append_error(E.record_list_too_large) == E.unknown_server_error
    assert map_append_error(E.invalid_request) == E.invalid_request


def test_unload_answers_not_coordinator_to_steps_in_flight() -> None:
    h = Harness()
    step = h.ops.init_producer_id("t", 1000, new_producer_id=h.new_pid)
    h.ops.unload()
    assert h.drive(step).error == E.not_coordinator
