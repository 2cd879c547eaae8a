"""TxnOps: Kafka 3.9's TransactionCoordinator over the transactions of one __transaction_state partition
(or of all, the runtime decides), for clients of transaction version 1 (EndTxn v0-v4).

Every operation returns a TxnStep (steps.py says how the runtime drives it). Nothing here awaits or does
I/O; the clock is `clock_ms`. A transaction with a transition in flight (its record being written, or its
markers being sent) answers CONCURRENT_TRANSACTIONS to InitProducerId, AddPartitionsToTxn and EndTxn, as
Kafka's pendingState does. `replay` applies records of the log (load; also a live record, idempotently).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.transactions import descriptions, ending
from coordinator.transactions.lifecycle import TxnState
from coordinator.transactions.steps import MarkerJob, TxnAnswer, TxnStep
from coordinator.transactions.txn_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TxnMetadata,
    TxnStateError,
    TxnTransit,
    is_epoch_exhausted,
)
from storage.txn_log_records import TxnLogValue

_E = ErrorCode


@dataclass(frozen=True, slots=True)
class TxnSettings:
    """transaction.max.timeout.ms and transactional.id.expiration.ms (Kafka's defaults); the two scan
    intervals are for the runtime's timers."""

    max_timeout_ms: int = 900000
    id_expiration_ms: int = 604800000
    abort_timed_out_transaction_cleanup_interval_ms: int = 10000
    remove_expired_transactional_id_cleanup_interval_ms: int = 3600000


#: a new producer id; None when none can be handed out now (COORDINATOR_LOAD_IN_PROGRESS, retriable);
#: a KafkaError raised by it becomes the answer's error
NewProducerId = Callable[[], "int | None"]


class TxnOps:
    def __init__(self, txns: dict[str, TxnMetadata] | None, clock_ms: Callable[[], int],
                 settings: TxnSettings | None = None, coordinator_epoch: int = 0) -> None:
        self.txns: dict[str, TxnMetadata] = txns if txns is not None else {}
        self._clock = clock_ms
        self.settings = settings or TxnSettings()
        self.coordinator_epoch = coordinator_epoch

    def clock_ms(self) -> int:
        return self._clock()

    # --- InitProducerId -----------------------------------------------------------------------

    def init_producer_id(self, txn_id: str, timeout_ms: int, expected_pid: int = NO_PRODUCER_ID,
                         expected_epoch: int = NO_PRODUCER_EPOCH,
                         new_producer_id: NewProducerId | None = None) -> TxnStep:
        """InitProducerId with a transactional id (the runtime answers a null one itself). The answer of
        `written` carries the producer id and epoch; an ongoing transaction is aborted first (a step whose
        answer is CONCURRENT_TRANSACTIONS, with markers): the client retries."""
        if not txn_id:
            return ending.immediate(txn_id, _E.invalid_request)
        if (expected_pid == NO_PRODUCER_ID) != (expected_epoch == NO_PRODUCER_EPOCH):
            return ending.immediate(txn_id, _E.invalid_request)  # KafkaApis: both or neither
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            return ending.immediate(txn_id, _E.invalid_transaction_timeout)
        expected = None if expected_pid == NO_PRODUCER_ID else (expected_pid, expected_epoch)
        md = self.txns.get(txn_id)
        if md is None:
            pid = self._new_producer_id(new_producer_id)
            if isinstance(pid, ErrorCode):
                return ending.immediate(txn_id, pid)
            md = TxnMetadata(txn_id, pid, txn_timeout_ms=timeout_ms, state=TxnState.EMPTY,
                             txn_last_update_ms=self.clock_ms())
            self.txns[txn_id] = md
        prepared = self._prepare_init(md, timeout_ms, expected, new_producer_id)
        if isinstance(prepared, ErrorCode):
            return ending.immediate(txn_id, prepared)
        if prepared.state == TxnState.PREPARE_EPOCH_FENCE:
            step = ending.end_transaction(self, txn_id, prepared.producer_id, prepared.producer_epoch,
                                          commit=False, from_client=False)
            return _retriable_after_fence(step)
        transit = prepared

        def then(step: TxnStep, error: ErrorCode) -> TxnAnswer:
            if error != _E.none:
                return TxnAnswer(error)
            return TxnAnswer(_E.none, transit.producer_id, transit.producer_epoch)

        return ending.transit_step(self, md, transit, then)

    def _prepare_init(self, md: TxnMetadata, timeout_ms: int, expected: tuple[int, int] | None,
                      new_producer_id: NewProducerId | None) -> TxnTransit | ErrorCode:
        """Kafka's prepareInitProducerIdTransit."""
        if md.pending:
            return _E.concurrent_transactions
        if expected is not None and not (
                md.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == md.producer_id
                or (expected[0] == md.previous_producer_id and is_epoch_exhausted(expected[1]))):
            return _E.producer_fenced
        state = md.state
        if state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            return _E.concurrent_transactions
        if state in (TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT, TxnState.EMPTY):
            if md.epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                pid = self._new_producer_id(new_producer_id)
                if isinstance(pid, ErrorCode):
                    return pid
                return md.prepare_producer_id_rotation(pid, timeout_ms, self.clock_ms(), expected is not None)
            transit = md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1],
                                                          self.clock_ms())
            return _E.producer_fenced if transit is None else transit
        if state == TxnState.ONGOING:
            # abort the ongoing transaction first with a bumped epoch (never handed out); the client retries
            return md.prepare_fence_producer_epoch()
        raise TxnStateError(f"found transactional id {md.transactional_id} in state {state.name}")

    @staticmethod
    def _new_producer_id(new_producer_id: NewProducerId | None) -> int | ErrorCode:
        if new_producer_id is None:
            raise ValueError("init_producer_id needs new_producer_id to hand out a producer id")
        try:
            pid = new_producer_id()
        except KafkaError as exc:
            return exc.code
        return _E.coordinator_load_in_progress if pid is None else pid

    # --- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------

    def add_partitions(self, txn_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], verify_only: bool = False) -> TxnStep:
        """AddPartitionsToTxn (AddOffsetsToTxn adds the group's __consumer_offsets partition). verify_only
        (KIP-890's check by a partition leader): no write; `partition_errors` says for each partition NONE
        (in the transaction) or TRANSACTION_ABORTABLE, or the transaction's error for all."""
        wanted = set(partitions)
        if verify_only:
            return self._verify(txn_id, producer_id, producer_epoch, wanted)
        if not txn_id:
            return ending.immediate(txn_id, _E.invalid_request)
        md = self.txns.get(txn_id)
        if md is None or md.producer_id != producer_id:
            return ending.immediate(txn_id, _E.invalid_producer_id_mapping)
        if md.producer_epoch != producer_epoch:
            return ending.immediate(txn_id, _E.producer_fenced)
        if md.pending or md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ending.immediate(txn_id, _E.concurrent_transactions)
        if md.state == TxnState.ONGOING and wanted <= md.partitions:
            return ending.immediate(txn_id, _E.none)  # all there already: no write
        return ending.transit_step(self, md, md.prepare_add_partitions(wanted, self.clock_ms()))

    def _verify(self, txn_id: str, producer_id: int, producer_epoch: int, wanted: set[TopicPartition]) -> TxnStep:
        md = self.txns.get(txn_id) if txn_id else None
        error: ErrorCode | None = None
        if not txn_id:
            error = _E.invalid_request
        elif md is None or md.producer_id != producer_id:
            error = _E.invalid_producer_id_mapping
        elif md.producer_epoch != producer_epoch:
            error = _E.producer_fenced
        elif md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            error = _E.concurrent_transactions
        if error is not None or md is None:
            error = error if error is not None else _E.invalid_producer_id_mapping
            return TxnStep(txn_id, error=error, partition_errors=dict.fromkeys(wanted, error))
        found = {tp: (_E.none if tp in md.partitions else _E.transaction_abortable) for tp in wanted}
        return TxnStep(txn_id, error=_E.none, partition_errors=found)

    # --- EndTxn --------------------------------------------------------------------------------

    def end_txn(self, txn_id: str, producer_id: int, producer_epoch: int, commit: bool) -> TxnStep:
        """EndTxn v0-v4: PrepareCommit/PrepareAbort, then markers (step.markers after `written`); a retry
        after the transaction completed the same way answers NONE."""
        return ending.end_transaction(self, txn_id, producer_id, producer_epoch, commit, from_client=True)

    # --- scans ---------------------------------------------------------------------------------

    def timed_out(self, now_ms: int | None = None) -> list[TxnStep]:
        """Kafka's abortTimedOutTransactions (every transaction.abort.timed.out.transaction.cleanup.interval.ms)."""
        return ending.abort_timed_out(self, self.clock_ms() if now_ms is None else now_ms)

    def expired(self, now_ms: int | None = None) -> list[TxnStep]:
        """Kafka's removeExpiredTransactionalIds: each Empty/CompleteCommit/CompleteAbort id idle for
        transactional.id.expiration.ms (none pending) goes Dead; its step writes a tombstone, and its
        `written(None)` removes the id (a failed write leaves it as it was)."""
        now = self.clock_ms() if now_ms is None else now_ms
        steps = []
        for md in list(self.txns.values()):
            if md.pending or not md.state.expiration_allowed:
                continue
            if md.txn_last_update_ms > now - self.settings.id_expiration_ms:
                continue
            steps.append(self._tombstone_step(md, md.prepare_dead()))
        return steps

    def _tombstone_step(self, md: TxnMetadata, dead: TxnTransit) -> TxnStep:
        def on_written(step: TxnStep, error: ErrorCode) -> TxnAnswer:
            if self.txns.get(md.transactional_id) is md:
                if (error == _E.none and md.pending_state == TxnState.DEAD
                        and md.producer_epoch == dead.producer_epoch):
                    del self.txns[md.transactional_id]
                else:
                    md.reset_pending()
            return TxnAnswer(error)

        return TxnStep(md.transactional_id, tombstone=True, on_written=on_written)

    # --- the log -------------------------------------------------------------------------------

    def replay(self, txn_id: str, value: TxnLogValue | None) -> None:
        """A record of the log: the id's metadata becomes what it says (None: a tombstone removes the id).
        Replaying a record this TxnOps wrote itself (before or after its `written`) changes nothing."""
        if value is None:
            self.txns.pop(txn_id, None)
            return
        md = self.txns.get(txn_id)
        loaded = TxnMetadata.from_value(txn_id, value)
        if md is not None:
            if md.pending_transit is not None and md.pending_transit.to_value() == value:
                return  # a live write in flight: its `written` completes it
            if not md.pending and md.logged_fields() == loaded.logged_fields():
                return  # already applied (keeps what the log does not carry: the last epoch)
        self.txns[txn_id] = loaded

    def recovering(self) -> list[MarkerJob]:
        """After a load: a marker job for each transaction in PrepareCommit/PrepareAbort."""
        return ending.recovering(self)

    def unload(self) -> None:
        """The partition is no longer ours: steps still in flight answer NOT_COORDINATOR."""
        self.txns.clear()


    # --- admin views (last: `list` would shadow the builtin in the annotations above) ------------

    def describe(self, txn_id: str) -> descriptions.TxnDescription:
        return descriptions.describe(self.txns, txn_id)

    def list(self, states_filter: Iterable[str] = (), producer_ids_filter: Iterable[int] = (),
             duration_filter_ms: int = -1) -> descriptions.TxnListing:
        return descriptions.list_transactions(self.txns, self.clock_ms(), states_filter, producer_ids_filter,
                                       duration_filter_ms)

def _retriable_after_fence(step: TxnStep) -> TxnStep:
    """InitProducerId that fenced an ongoing transaction answers CONCURRENT_TRANSACTIONS once the abort is
    written (the client retries and gets the epoch bumped once more), or the write's error."""
    if not step.needs_write:
        return step
    inner = step._on_written
    assert inner is not None

    def on_written(s: TxnStep, error: ErrorCode) -> TxnAnswer:
        answer = inner(s, error)
        return TxnAnswer(_E.concurrent_transactions if answer.error == _E.none else answer.error)

    step._on_written = on_written
    return step
