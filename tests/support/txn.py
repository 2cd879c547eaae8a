"""A fake runtime for the transaction coordinator's pure logic: a clock, an in-memory __transaction_state
log and the driving of TxnSteps and MarkerJobs the way the real runtime must do it."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.transactions.operations import TxnOps, TxnSettings
from coordinator.transactions.steps import MarkerJob, TxnAnswer, TxnStep
from coordinator.transactions.txn_metadata import TxnMetadata
from storage.txn_log_records import TxnLogValue


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


class Harness:
    def __init__(self, settings: TxnSettings | None = None, coordinator_epoch: int = 0) -> None:
        self.clock = Clock()
        self.ops = TxnOps({}, self.clock, settings, coordinator_epoch)
        self.log: list[tuple[str, TxnLogValue | None]] = []
        self.markers: list[tuple[str, int, int, int, bool, int]] = []  # (topic, partition, pid, epoch, commit, ce)
        self._next_pid = 1000

    def new_pid(self) -> int:
        pid = self._next_pid
        self._next_pid += 1
        return pid

    def md(self, txn_id: str) -> TxnMetadata:
        return self.ops.txns[txn_id]

    def drive(self, step: TxnStep, error: ErrorCode | None = None) -> TxnAnswer:
        """Write the step's record (durably, or failing with `error`) and settle it."""
        if not step.needs_write:
            answer = step.answer
            assert answer is not None
            return answer
        if error is None:
            self.log.append((step.txn_id, None if step.tombstone else step.record))
        return step.written(error)

    def send_markers(self, job: MarkerJob, complete_error: ErrorCode | None = None) -> TxnAnswer | None:
        for topic, partition in sorted(job.partitions):
            self.markers.append((topic, partition, job.producer_id, job.producer_epoch, job.commit,
                                 job.coordinator_epoch))
            job.partition_done((topic, partition))
        done = job.complete()
        return None if done is None else self.drive(done, complete_error)

    def init(self, txn_id: str, timeout_ms: int = 60000, expected_pid: int = -1, expected_epoch: int = -1,
             error: ErrorCode | None = None) -> TxnAnswer:
        step = self.ops.init_producer_id(txn_id, timeout_ms, expected_pid, expected_epoch,
                                         new_producer_id=self.new_pid)
        answer = self.drive(step, error)
        if step.markers is not None:
            self.send_markers(step.markers)
        return answer

    def add(self, txn_id: str, pid: int, epoch: int, *tps: tuple[str, int],
            error: ErrorCode | None = None) -> TxnAnswer:
        return self.drive(self.ops.add_partitions(txn_id, pid, epoch, list(tps)), error)

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool, markers: bool = True,
            error: ErrorCode | None = None) -> tuple[TxnAnswer, TxnStep]:
        step = self.ops.end_txn(txn_id, pid, epoch, commit)
        answer = self.drive(step, error)
        if markers and step.markers is not None:
            self.send_markers(step.markers)
        return answer, step

    def begin(self, txn_id: str = "t", *tps: tuple[str, int]) -> tuple[int, int]:
        """A transaction in Ongoing with `tps` (default one partition): (pid, epoch)."""
        answer = self.init(txn_id)
        assert answer.error == ErrorCode.none
        answer2 = self.add(txn_id, answer.producer_id, answer.producer_epoch, *(tps or (("topic", 0),)))
        assert answer2.error == ErrorCode.none
        return answer.producer_id, answer.producer_epoch

    def replayed(self) -> TxnOps:
        """A new TxnOps loaded from this log."""
        ops = TxnOps({}, self.clock, self.ops.settings, self.ops.coordinator_epoch + 1)
        for txn_id, value in self.log:
            ops.replay(txn_id, value)
        return ops
