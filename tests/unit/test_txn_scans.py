"""TxnOps' scans and the log: timed-out transactions, expired ids, Describe/ListTransactions, replay, recovery."""

from __future__ import annotations

from kio.schema.errors import ErrorCode as E

from coordinator.transactions.lifecycle import TxnState as S
from coordinator.transactions.operations import TxnOps, TxnSettings
from coordinator.transactions.txn_metadata import TxnMetadata
from tests.support.txn import Harness


def logged(ops: TxnOps) -> dict[str, tuple]:
    return {txn_id: md.logged_fields() for txn_id, md in ops.txns.items()}


# --- timeouts ------------------------------------------------------------------------------------

def test_timed_out_transaction_is_aborted_with_an_epoch_bump_and_the_old_epoch_is_fenced() -> None:
    h = Harness()
    pid, epoch = h.begin("t", ("a", 0))
    h.init("idle")
    h.clock.advance(60000)
    assert h.ops.timed_out() == []  # start + timeout < now is needed, not <=
    h.clock.advance(1)
    [step] = h.ops.timed_out()
    assert step.txn_id == "t" and step.record is not None
    assert (step.record.transaction_status, step.record.producer_epoch) == (S.PREPARE_ABORT, epoch + 1)
    assert h.ops.timed_out() == []  # pending now: not picked twice
    assert h.drive(step).error == E.none
    assert step.markers is not None and not step.markers.commit and step.markers.producer_epoch == epoch + 1
    h.send_markers(step.markers)
    md = h.md("t")
    assert (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert h.end("t", pid, epoch, commit=True)[0].error == E.producer_fenced
    assert h.add("t", pid, epoch, ("a", 1)).error == E.producer_fenced
    assert h.init("t").producer_epoch == epoch + 2


def test_a_failed_timeout_abort_does_not_bump_the_epoch_twice() -> None:
    h = Harness()
    _, epoch = h.begin()
    h.clock.advance(60001)
    [step] = h.ops.timed_out()
    assert h.drive(step, E.not_leader_or_follower).error == E.not_coordinator
    md = h.md("t")
    # Kafka: the bumped epoch stays in memory (never handed out), the state is Ongoing again
    assert (md.state, md.pending_state, md.producer_epoch, md.has_failed_epoch_fence) == (
        S.ONGOING, None, epoch + 1, True)
    [again] = h.ops.timed_out()
    assert again.record is not None and again.record.producer_epoch == epoch + 1
    h.drive(again)
    assert again.markers is not None
    h.send_markers(again.markers)
    assert (md.state, md.producer_epoch, md.has_failed_epoch_fence) == (S.COMPLETE_ABORT, epoch + 1, False)


def test_timeout_scan_skips_pending_and_other_states() -> None:
    h = Harness()
    pid, epoch = h.begin("t")
    h.end("t", pid, epoch, commit=True, markers=False)  # PrepareCommit, markers out
    h.clock.advance(10**7)
    assert h.ops.timed_out() == []


# --- expiration ----------------------------------------------------------------------------------

def test_idle_ids_expire_with_a_tombstone_ongoing_ones_never() -> None:
    h = Harness(TxnSettings(id_expiration_ms=1000))
    h.init("empty")
    pid, epoch = h.begin("done")
    h.end("done", pid, epoch, commit=True)
    h.begin("ongoing")
    h.clock.advance(999)
    assert h.ops.expired() == []
    h.clock.advance(1)
    steps = h.ops.expired()
    assert sorted(s.txn_id for s in steps) == ["done", "empty"]
    assert all(s.tombstone and s.record is None for s in steps)
    assert h.md("empty").pending_state == S.DEAD
    assert h.init("empty").error == E.concurrent_transactions  # being expired
    assert h.ops.describe("empty").error == E.none  # still there until the tombstone is durable
    for s in steps:
        assert h.drive(s).error == E.none
    assert set(h.ops.txns) == {"ongoing"}
    assert h.log[-1][1] is None
    assert h.ops.describe("empty").error == E.transactional_id_not_found
    assert h.init("empty").producer_id not in (pid,)  # a new producer id


def test_failed_tombstone_keeps_the_id() -> None:
    h = Harness(TxnSettings(id_expiration_ms=10))
    h.init("t")
    h.clock.advance(10)
    [step] = h.ops.expired()
    assert h.drive(step, E.not_enough_replicas).error == E.coordinator_not_available
    assert (h.md("t").state, h.md("t").pending_state) == (S.EMPTY, None)
    assert h.init("t").producer_epoch == 1


# --- describe / list -------------------------------------------------------------------------------

def test_describe() -> None:
    h = Harness()
    pid, epoch = h.begin("t", ("b", 1), ("a", 2), ("a", 0))
    d = h.ops.describe("t")
    assert (d.error, d.state, d.producer_id, d.producer_epoch, d.transaction_timeout_ms) == (
        E.none, "Ongoing", pid, epoch, 60000)
    assert d.transaction_start_time_ms == h.md("t").txn_start_ms
    assert d.topics == (("a", (0, 2)), ("b", (1,)))
    assert h.ops.describe("x").error == E.transactional_id_not_found
    assert h.ops.describe("").error == E.invalid_request


def test_list_with_filters() -> None:
    h = Harness()
    h.init("e")
    h.clock.advance(1000)
    pid, _ = h.begin("o")
    h.clock.advance(5000)
    listing = h.ops.list()
    assert {(t.transactional_id, t.state) for t in listing.states} == {("e", "Empty"), ("o", "Ongoing")}
    assert [t.transactional_id for t in h.ops.list(["Ongoing"]).states] == ["o"]
    assert [t.transactional_id for t in h.ops.list(producer_ids_filter=[pid]).states] == ["o"]
    unknown = h.ops.list(["Ongoing", "Bogus"])
    assert unknown.unknown_state_filters == ("Bogus",) and [t.transactional_id for t in unknown.states] == ["o"]
    # duration: only transactions running longer than the filter (Empty has start -1: always "long")
    assert {t.transactional_id for t in h.ops.list(duration_filter_ms=4999).states} == {"e", "o"}
    assert {t.transactional_id for t in h.ops.list(duration_filter_ms=5000).states} == {"e"}
    h.md("e").state = S.DEAD
    assert "e" not in {t.transactional_id for t in h.ops.list().states}


# --- replay and recovery -------------------------------------------------------------------------

def test_replaying_the_written_records_rebuilds_equal_state() -> None:
    h = Harness(TxnSettings(id_expiration_ms=100_000))
    pid, epoch = h.begin("a", ("x", 0), ("y", 1))
    h.end("a", pid, epoch, commit=True)
    h.begin("b", ("x", 1))
    h.clock.advance(10)
    pid_c, epoch_c = h.begin("c", ("z", 0))
    h.end("c", pid_c, epoch_c, commit=False, markers=False)  # stays PrepareAbort
    h.init("d")
    h.clock.advance(100_000)
    h.init("b")  # fences b: PrepareAbort + markers + CompleteAbort
    for step in h.ops.expired():
        h.drive(step)
    assert "d" not in h.ops.txns
    assert logged(h.replayed()) == logged(h.ops)


def test_replay_of_live_records_changes_nothing() -> None:
    h = Harness()
    pid, epoch = h.begin()
    md = h.md("t")
    step = h.ops.add_partitions("t", pid, epoch, [("q", 1)])
    assert step.record is not None
    h.ops.replay("t", step.record)  # before written: the write in flight completes it
    assert h.md("t") is md and md.pending_state == S.ONGOING
    h.drive(step)
    h.ops.replay("t", step.record)  # after written: already applied
    assert h.md("t") is md and md.partitions == {("topic", 0), ("q", 1)}
    first = h.init("k")
    h.init("k", expected_pid=first.producer_id, expected_epoch=first.producer_epoch)
    assert h.md("k").last_producer_epoch == 0
    h.ops.replay(*h.log[-1])  # type: ignore[arg-type]
    assert h.md("k").producer_epoch == 1 and h.md("k").last_producer_epoch == 0  # KIP-360's memory survives


def test_replay_tombstone_removes_and_a_foreign_record_replaces() -> None:
    h = Harness()
    h.init("t")
    h.ops.replay("t", None)
    assert "t" not in h.ops.txns
    h.init("u")
    value = h.log[-1][1]
    assert value is not None
    other = TxnMetadata.from_value("u", value)
    other.producer_epoch = 9
    h.ops.replay("u", other.current_transit().to_value())
    assert h.md("u").producer_epoch == 9


def test_recovering_after_a_replay_of_prepare_commit_resends_markers_and_completes() -> None:
    h = Harness()
    pid, epoch = h.begin("t", ("a", 0), ("b", 1))
    h.end("t", pid, epoch, commit=True, markers=False)  # crash before any marker
    pid2, epoch2 = h.begin("u", ("c", 0))
    h.end("u", pid2, epoch2, commit=False, markers=False)
    loaded = h.replayed()
    assert loaded.coordinator_epoch == 1
    jobs = {job.txn_id: job for job in loaded.recovering()}
    assert set(jobs) == {"t", "u"}
    t = jobs["t"]
    assert (t.commit, t.producer_id, t.producer_epoch, t.partitions, t.coordinator_epoch) == (
        True, pid, epoch, frozenset({("a", 0), ("b", 1)}), 1)
    assert not jobs["u"].commit
    assert loaded.recovering() == []  # pending now
    # while recovering, requests wait
    assert loaded.end_txn("t", pid, epoch, True).error == E.concurrent_transactions
    h.ops = loaded
    h.send_markers(t)
    h.send_markers(jobs["u"])
    assert (loaded.txns["t"].state, loaded.txns["u"].state) == (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
    assert h.end("t", pid, epoch, commit=True)[0].error == E.none  # the client's retry after the crash
