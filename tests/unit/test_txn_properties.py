"""Random sequences of transaction operations (with failed writes and late markers) keep the invariants,
and replaying what was written rebuilds the state."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
from kio.schema.errors import ErrorCode as E

from coordinator.transactions.lifecycle import TxnState as S
from coordinator.transactions.operations import TxnSettings
from coordinator.transactions.steps import MarkerJob, TxnStep
from tests.support.examples import examples
from tests.support.txn import Harness

OPS = st.lists(st.tuples(
    st.sampled_from(["init", "add", "add", "commit", "commit", "abort", "tick", "expire", "timeout", "markers",
                     "markers", "stale"]),
    st.sampled_from(["a", "b"]),
    st.integers(0, 5).map(lambda n: n == 0),  # the write fails (1 in 6)
    st.integers(0, 3),
), min_size=10, max_size=60)


class Run:
    def __init__(self) -> None:
        self.h = Harness(TxnSettings(id_expiration_ms=50_000))
        self.client: dict[str, tuple[int, int]] = {}
        self.jobs: list[MarkerJob] = []
        self.epochs: dict[tuple[str, int], int] = {}

    def settle(self, step: TxnStep, fail: bool) -> None:
        answer = self.h.drive(step, E.not_enough_replicas if fail else None)
        if step.markers is not None:
            self.jobs.append(step.markers)
        if answer.error == E.none and answer.producer_id >= 0:
            self.client[step.txn_id] = (answer.producer_id, answer.producer_epoch)

    def run_job(self) -> None:
        job = self.jobs.pop(0)
        self.h.send_markers(job)

    def apply(self, op: str, txn_id: str, fail: bool, n: int) -> None:
        h, ops = self.h, self.h.ops
        pid, epoch = self.client.get(txn_id, (-1, -1))
        if op == "init":
            self.settle(ops.init_producer_id(txn_id, 10_000, new_producer_id=h.new_pid), fail)
        elif op == "add":
            self.settle(ops.add_partitions(txn_id, pid, epoch, [("t", n)]), fail)
        elif op in ("commit", "abort"):
            self.settle(ops.end_txn(txn_id, pid, epoch, op == "commit"), fail)
        elif op == "stale":
            self.settle(ops.end_txn(txn_id, pid, epoch - 1, True), fail)
        elif op == "tick":
            h.clock.advance(4_000 * (n + 1))
        elif op == "expire":
            for step in ops.expired():
                self.settle(step, fail)
        elif op == "timeout":
            for step in ops.timed_out():
                self.settle(step, fail)
        elif op == "markers" and self.jobs:
            self.run_job()

    def check(self) -> None:
        waiting = {job.txn_id for job in self.jobs}
        for txn_id, md in self.h.ops.txns.items():
            assert md.state not in (S.PREPARE_EPOCH_FENCE, S.DEAD)
            assert md.pending_state in (None, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
            assert (md.pending_state is not None) == (txn_id in waiting)
            if md.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                assert not md.partitions
            if md.state == S.ONGOING:
                assert md.partitions and md.txn_start_ms >= 0
            key = (txn_id, md.producer_id)
            assert md.producer_epoch >= self.epochs.get(key, -1)  # never goes back for one producer id
            self.epochs[key] = md.producer_epoch


@settings(max_examples=examples(150), deadline=None)
@given(OPS)
def test_random_operations_keep_invariants_and_replay_rebuilds_the_state(ops: list) -> None:
    run = Run()
    for op in ops:
        run.apply(*op)
        run.check()
    while run.jobs:
        run.run_job()
        run.check()
    replayed = run.h.replayed()
    for txn_id, md in run.h.ops.txns.items():
        if md.has_failed_epoch_fence or md.producer_epoch < 0:
            continue  # Kafka keeps these in memory only (a bumped fence epoch, an id whose first write failed)
        assert replayed.txns[txn_id].logged_fields() == md.logged_fields()
    assert set(replayed.txns) <= set(run.h.ops.txns)
