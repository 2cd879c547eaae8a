"""Kafka's TransactionMetadata and TxnTransitMetadata (kafka.coordinator.transaction, 3.9, transaction version 1).

A transition is prepared first (`prepare_*` returns a TxnTransit and sets `pending_state`: a second
transition is refused until this one settles), written to __transaction_state as `to_value(transit)`,
then completed (`complete_transition`) once the record is durable -- or dropped (`pending_state = None`)
when the write failed. As in Kafka 3.9, a record carries producer id and epoch, timeout, status, partitions
and the two timestamps; the last producer id/epoch (KIP-360 retries) live in memory only, so a reload
starts them at -1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn

from coordinator.transactions.lifecycle import TxnState
from storage.txn_log_records import TxnLogValue, TxnPartitions

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767

TopicPartition = tuple[str, int]


class TxnStateError(Exception):
    """Kafka's IllegalStateException/IllegalArgumentException of the transaction metadata: a bug, never an answer."""


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka never hands out Short.MaxValue, so that the coordinator can always fence a producer with it."""
    return producer_epoch >= SHORT_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """Kafka's TxnTransitMetadata: the target of one transition (what the record says)."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    txn_start_ms: int
    txn_last_update_ms: int
    client_transaction_version: int = 0

    def to_value(self) -> TxnLogValue:
        """The TransactionLogValue Kafka writes for this transition (partitions null when Empty)."""
        if self.state == TxnState.EMPTY and self.partitions:
            raise TxnStateError(f"transaction in state Empty with partitions: {self}")
        parts: tuple[TxnPartitions, ...] | None = None
        if self.state != TxnState.EMPTY:
            parts = _group_partitions(self.partitions)
        return TxnLogValue(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            transaction_timeout_ms=self.txn_timeout_ms,
            transaction_status=int(self.state),
            transaction_partitions=parts,
            transaction_last_update_timestamp_ms=self.txn_last_update_ms,
            transaction_start_timestamp_ms=self.txn_start_ms,
            client_transaction_version=self.client_transaction_version,
        )


def _group_partitions(partitions: frozenset[TopicPartition] | set[TopicPartition]) -> tuple[TxnPartitions, ...]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return tuple(TxnPartitions(topic, tuple(ids)) for topic, ids in by_topic.items())


@dataclass(slots=True, eq=False)
class TxnMetadata:
    """Kafka's TransactionMetadata of one transactional id (mutable; one owner, no lock needed here)."""

    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID  # Kafka 3.9's lastProducerId
    next_producer_id: int = NO_PRODUCER_ID  # TV2 only; stays -1 for transaction version 1 clients
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_ms: int = -1
    txn_last_update_ms: int = -1
    pending_state: TxnState | None = None
    client_transaction_version: int = 0
    #: a fence whose write failed bumped the epoch already: the next fence does not bump it again
    has_failed_epoch_fence: bool = False
    #: the transit whose record is being written (pending_state's target), for replay of live writes
    pending_transit: TxnTransit | None = None

    # --- reading ------------------------------------------------------------------------------

    @property
    def pending(self) -> bool:
        """Kafka's pendingTransitionInProgress."""
        return self.pending_state is not None

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def current_transit(self) -> TxnTransit:
        """Kafka's prepareNoTransit: the metadata as it stands, as a transit (sets no pending state)."""
        return TxnTransit(self.producer_id, self.previous_producer_id, self.next_producer_id, self.producer_epoch,
                          self.last_producer_epoch, self.txn_timeout_ms, self.state, frozenset(self.partitions),
                          self.txn_start_ms, self.txn_last_update_ms, self.client_transaction_version)

    def logged_fields(self) -> tuple:
        """What the log carries of this metadata: replaying its records rebuilds exactly these. (An Empty
        record says start -1, while Kafka's memory keeps the previous transaction's start: not compared.)"""
        start = -1 if self.state == TxnState.EMPTY else self.txn_start_ms
        return (self.transactional_id, self.producer_id, self.producer_epoch, self.txn_timeout_ms, self.state,
                frozenset(self.partitions), start, self.txn_last_update_ms)

    @classmethod
    def from_value(cls, transactional_id: str, value: TxnLogValue) -> TxnMetadata:
        """Kafka's TransactionLog.readTxnRecordValue: the metadata a record describes (no pending state)."""
        state = TxnState(value.transaction_status)
        partitions: set[TopicPartition] = set()
        if state != TxnState.EMPTY and value.transaction_partitions:
            for tps in value.transaction_partitions:
                partitions.update((tps.topic, p) for p in tps.partition_ids)
        return cls(transactional_id=transactional_id, producer_id=value.producer_id,
                   previous_producer_id=value.previous_producer_id, next_producer_id=value.next_producer_id,
                   producer_epoch=value.producer_epoch, last_producer_epoch=NO_PRODUCER_EPOCH,
                   txn_timeout_ms=value.transaction_timeout_ms, state=state, partitions=partitions,
                   txn_start_ms=value.transaction_start_timestamp_ms,
                   txn_last_update_ms=value.transaction_last_update_timestamp_ms,
                   client_transaction_version=value.client_transaction_version)

    @staticmethod
    def to_value(transit: TxnTransit) -> TxnLogValue:
        return transit.to_value()

    # --- preparing transitions ----------------------------------------------------------------

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        if self.producer_epoch == SHORT_MAX:
            raise TxnStateError("cannot fence a producer with epoch Short.MaxValue: it would overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(TxnState.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH,
                             self.txn_timeout_ms, frozenset(self.partitions), self.txn_start_ms,
                             self.txn_last_update_ms)

    def prepare_increment_producer_epoch(self, new_timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransit | None:
        """InitProducerId's epoch bump (KIP-360 with an expected epoch); None: the caller is fenced."""
        if self.epoch_exhausted:
            raise TxnStateError(f"cannot allocate any more producer epochs for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            # a retry of a bump that succeeded: answer the current epoch again
            epochs = (self.producer_epoch, self.last_producer_epoch)
        else:
            return None
        return self._prepare(TxnState.EMPTY, self.producer_id, epochs[0], epochs[1], new_timeout_ms,
                             frozenset(), -1, now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        if self.state in (TxnState.ONGOING, TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            raise TxnStateError("cannot rotate producer ids while a transaction is still pending")
        last_epoch = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(TxnState.EMPTY, new_producer_id, 0, last_epoch, new_timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, added: set[TopicPartition] | frozenset[TopicPartition],
                               now_ms: int) -> TxnTransit:
        start = self.txn_start_ms
        if self.state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT):
            start = now_ms
        return self._prepare(TxnState.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.partitions | set(added)), start, now_ms)

    def prepare_abort_or_commit(self, new_state: TxnState, now_ms: int) -> TxnTransit:
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.partitions), self.txn_start_ms, now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        new_state = TxnState.COMPLETE_COMMIT if self.state == TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        self.has_failed_epoch_fence = False  # the PrepareX state was written: a later fence bumps again
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_ms, now_ms)

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(TxnState.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_ms, self.txn_last_update_ms)

    def _prepare(self, new_state: TxnState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[TopicPartition], start_ms: int, now_ms: int) -> TxnTransit:
        if self.pending_state is not None:
            raise TxnStateError(f"{self.transactional_id}: preparing {new_state.name} while {self.pending_state.name}"
                                " is pending")
        if producer_id < 0:
            raise TxnStateError(f"illegal new producer id {producer_id}")
        if new_state != TxnState.DEAD and epoch < 0:
            raise TxnStateError(f"illegal new producer epoch {epoch}")
        if self.state not in new_state.valid_previous_states:
            raise TxnStateError(f"{self.transactional_id}: {new_state.name} cannot follow {self.state.name}")
        transit = TxnTransit(producer_id, self.producer_id, NO_PRODUCER_ID, epoch, last_epoch, timeout_ms, new_state,
                             partitions, start_ms, now_ms, 0)
        self.pending_state = new_state
        self.pending_transit = transit
        return transit

    def reset_pending(self) -> None:
        """A failed write: drop the prepared transition (Kafka: pendingState = None)."""
        self.pending_state = None
        self.pending_transit = None

    def remove_partition(self, tp: TopicPartition) -> None:
        """A marker was written to `tp` (Kafka's removePartition, only while PrepareCommit/PrepareAbort)."""
        if self.state not in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            raise TxnStateError(f"{self.transactional_id}: removing a marked partition in state {self.state.name}")
        self.partitions.discard(tp)

    # --- completing ---------------------------------------------------------------------------

    def complete_transition(self, transit: TxnTransit) -> None:
        """Kafka's completeTransitionTo: the record of `transit` is durable; take its values."""
        to_state = self.pending_state
        if to_state is None:
            raise TxnStateError(f"{self.transactional_id}: completing {transit} without a pending state")
        if to_state != transit.state:
            self._fail(transit)
        if to_state == TxnState.EMPTY:
            if ((self.producer_epoch != transit.producer_epoch and not self._valid_epoch_bump(transit))
                    or transit.partitions or transit.txn_start_ms != -1):
                self._fail(transit)
            self.txn_timeout_ms = transit.txn_timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.previous_producer_id = transit.previous_producer_id
        elif to_state == TxnState.ONGOING:
            if (not self._valid_epoch(transit) or not self.partitions <= transit.partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms):
                self._fail(transit)
            self.txn_start_ms = transit.txn_start_ms
            self.partitions |= transit.partitions
        elif to_state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            if (not self._valid_epoch(transit) or self.partitions != transit.partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms or self.txn_start_ms != transit.txn_start_ms):
                self._fail(transit)
        elif to_state in (TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT):
            if (not self._valid_epoch(transit) or self.txn_timeout_ms != transit.txn_timeout_ms
                    or transit.txn_start_ms == -1):
                self._fail(transit)
            self.txn_start_ms = transit.txn_start_ms
            self.partitions.clear()
        else:  # PrepareEpochFence is never completed (PrepareAbort replaces it); Dead removes the id instead
            self._fail(transit)
        self.client_transaction_version = transit.client_transaction_version
        self.txn_last_update_ms = transit.txn_last_update_ms
        self.pending_state = None
        self.pending_transit = None
        self.state = to_state

    def _valid_epoch(self, transit: TxnTransit) -> bool:
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id

    def _valid_epoch_bump(self, transit: TxnTransit) -> bool:
        return (transit.producer_epoch == self.producer_epoch + 1
                or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))

    def _fail(self, transit: TxnTransit) -> NoReturn:
        raise TxnStateError(f"{self.transactional_id}: transition from {self.state.name} to {transit} failed")
