"""What a transaction operation hands the runtime: a TxnStep (one record to write, then `written`), and for
EndTxn and aborts a MarkerJob (markers to write, then `complete` gives the CompleteCommit/CompleteAbort step).

How the runtime drives a step, in order:

1. `step.needs_write` False: nothing to write; the answer is `step.answer` (== `step.written(None)`).
2. Otherwise append `step.record` (None with `step.tombstone` True: a null value) under key `step.txn_id`
   to the transaction's __transaction_state partition; once the append is durable or failed, call
   `answer = step.written(None)` or `step.written(append_error)` exactly once. `written` maps a log error as
   Kafka's appendTransactionToLog does (NOT_LEADER_OR_FOLLOWER -> NOT_COORDINATOR, REQUEST_TIMED_OUT ->
   COORDINATOR_NOT_AVAILABLE, ...), completes or drops the pending transition and returns the TxnAnswer.
3. After `written`, `step.markers` may hold a MarkerJob (EndTxn, an InitProducerId fencing an ongoing
   transaction, a timed-out transaction): write a marker of `job.commit` with `job.producer_id`,
   `job.producer_epoch` and `job.coordinator_epoch` to every partition in `job.partitions` (a deleted
   partition counts as done, as Kafka's marker sender does; `job.partition_done(tp)` may record each one),
   then `done = job.complete()`: a TxnStep writing CompleteCommit/CompleteAbort (None: nothing to do, the
   transaction changed meanwhile). Drive it as in 2; when its `written` answers COORDINATOR_NOT_AVAILABLE,
   `done.retry` is True: append the same record again later and call `done.written` again.
   `job.complete(markers_done=False)` gives the job up (Kafka: the producer or coordinator epoch moved on):
   the transaction stays pending until the partition is loaded again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from storage.txn_log_records import TxnLogValue

TopicPartition = tuple[str, int]

_E = ErrorCode
#: Kafka's TransactionStateManager.appendTransactionToLog: a log append error -> the coordinator's answer.
_APPEND_ERRORS = {
    _E.unknown_topic_or_partition: _E.coordinator_not_available,
    _E.not_enough_replicas: _E.coordinator_not_available,
    _E.not_enough_replicas_after_append: _E.coordinator_not_available,
    _E.request_timed_out: _E.coordinator_not_available,
    _E.not_leader_or_follower: _E.not_coordinator,
    _E.kafka_storage_error: _E.not_coordinator,
    _E.message_too_large: _E.unknown_server_error,
    _E.record_list_too_large: _E.unknown_server_error,
}


def map_append_error(error: ErrorCode | None) -> ErrorCode:
    """The coordinator's error for a failed (or, with None / NONE, successful) append to its log."""
    if error is None:
        return ErrorCode.none
    return _APPEND_ERRORS.get(error, error)


@dataclass(frozen=True, slots=True)
class TxnAnswer:
    """The answer of an operation: error (ErrorCode.none on success) and, for InitProducerId, the id and epoch."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


class TxnStep:
    """One decision of the coordinator: an immediate answer, or a record to write and what follows it."""

    __slots__ = ("error", "markers", "partition_errors", "record", "retry", "tombstone", "txn_id", "_on_written",
                 "_answer")

    def __init__(self, txn_id: str, *, error: ErrorCode | None = None, record: TxnLogValue | None = None,
                 tombstone: bool = False, on_written: Callable[[TxnStep, ErrorCode], TxnAnswer] | None = None,
                 partition_errors: dict[TopicPartition, ErrorCode] | None = None) -> None:
        self.txn_id = txn_id
        #: the immediate answer's error when nothing is written (ErrorCode.none: success); None with a record
        self.error = error
        self.record = record
        self.tombstone = tombstone
        #: AddPartitionsToTxn verify_only: each partition's error
        self.partition_errors = partition_errors
        #: set by `written` when markers must be sent next (EndTxn, fence, timeout)
        self.markers: MarkerJob | None = None
        #: set by `written` on a completion write that Kafka retries (COORDINATOR_NOT_AVAILABLE)
        self.retry = False
        self._on_written = on_written
        self._answer: TxnAnswer | None = None

    @property
    def needs_write(self) -> bool:
        return self.record is not None or self.tombstone

    @property
    def answer(self) -> TxnAnswer | None:
        """The answer: the immediate one, or the one `written` returned (None before that)."""
        if self._answer is None and not self.needs_write:
            self._answer = TxnAnswer(self.error if self.error is not None else ErrorCode.none)
        return self._answer

    def written(self, error: ErrorCode | None = None) -> TxnAnswer:
        """The record is durable (error None or ErrorCode.none) or its append failed with `error`."""
        if not self.needs_write:
            answer = self.answer
            assert answer is not None
            return answer
        if self._answer is not None and not self.retry:
            raise RuntimeError(f"TxnStep for {self.txn_id!r} was already written")
        assert self._on_written is not None
        self.retry = False
        self._answer = self._on_written(self, map_append_error(error))
        return self._answer

    def __repr__(self) -> str:
        what = "tombstone" if self.tombstone else (self.record if self.record is not None else self.error)
        return f"TxnStep({self.txn_id!r}, {what})"


@dataclass(eq=False)
class MarkerJob:
    """Kafka's TxnMarkerEntry + PendingCompleteTxn: markers to write, then the completion record."""

    txn_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    coordinator_epoch: int
    _partition_done: Callable[[TopicPartition], None] = field(repr=False, default=lambda tp: None)
    _complete: Callable[[bool], TxnStep | None] = field(repr=False, default=lambda done: None)

    def partition_done(self, tp: TopicPartition) -> None:
        """A marker of this job is durable in `tp` (or `tp` was deleted): it leaves the transaction."""
        self._partition_done(tp)

    def complete(self, markers_done: bool = True) -> TxnStep | None:
        """Every marker is written: the step writing CompleteCommit/CompleteAbort (None if the transaction
        changed meanwhile). markers_done=False: give up (no record; the transaction waits for a reload)."""
        return self._complete(markers_done)


#: KafkaApis: clients below these request versions do not know PRODUCER_FENCED; they get INVALID_PRODUCER_EPOCH
_PRODUCER_FENCED_SINCE = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2, "EndTxn": 2}


def client_error(error: ErrorCode, api: str, version: int) -> ErrorCode:
    """The error to put in the answer of `api` at request `version` (Kafka's per-version compatibility)."""
    if error == ErrorCode.producer_fenced and version < _PRODUCER_FENCED_SINCE.get(api, 0):
        return ErrorCode.invalid_producer_epoch
    return error
