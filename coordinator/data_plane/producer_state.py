"""Idempotent and transactional producer state of one partition, as Kafka's ProducerStateManager keeps it.

Per producer id: the current epoch, the metadata of its last 5 batches (Kafka's
NUM_BATCHES_TO_RETAIN, which is also the producer's max.in.flight bound), the last coordinator
epoch of its markers, its last timestamp and the first offset of its ongoing transaction here
(Kafka's currentTxnFirstOffset). Rules for a data batch, in Kafka's order
(UnifiedLog.analyzeAndValidateProducerState, ProducerAppendInfo):

1. a batch whose (epoch, first sequence, last sequence) equals a retained batch is a
   retried duplicate: it is acknowledged with that batch's offsets and not appended;
2. (a transactional batch that would begin a transaction is verified: DataPlane.txn_verifier);
3. an epoch below the current one -> INVALID_PRODUCER_EPOCH;
4. a new (higher) epoch must start at sequence 0 -> else OUT_OF_ORDER_SEQUENCE_NUMBER;
5. the same epoch must continue at last sequence + 1 (wrapping at Integer.MAX_VALUE; -1 when
   a marker emptied the batches) -> else OUT_OF_ORDER_SEQUENCE_NUMBER;
6. a producer this partition has never seen may start at any sequence;
7. a non-transactional batch from a producer with an ongoing transaction -> INVALID_TXN_STATE;
   a transactional batch without one begins a transaction at its base offset.

A marker (ProducerAppendInfo.appendEndTxnMarker): an epoch below the producer's ->
INVALID_PRODUCER_EPOCH; a coordinator epoch below the last one seen -> TRANSACTION_COORDINATOR_FENCED;
else it ends the ongoing transaction (if any) and sets the producer's epoch (a bump clears its
batches) and coordinator epoch. Transactions themselves are tracked in `txns` (txn_state.py).

The state lives in memory only; `rebuild` replays batch headers and markers from the log on
start-up (they carry producer id, epoch, sequences and the transactional flag), which is what
Kafka does without snapshot files: ongoing transactions (an open one at the end of the log
included) and the aborted list come back with it.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from coordinator.data_plane.txn_state import TxnTracker
from coordinator.data_plane.validation import increment_sequence
from coordinator.errors import InvalidProducerEpoch, InvalidTxnState, KafkaError, OutOfOrderSequence
from storage.batch import iter_batches
from storage.control_records import read_marker

BATCHES_TO_RETAIN = 5
REBUILD_CHUNK = 8 << 20
NO_SEQUENCE = -1


class BatchMeta(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class ProducerEntry:
    __slots__ = ("epoch", "batches", "coordinator_epoch", "last_timestamp", "txn_first_offset")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.batches: deque[BatchMeta] = deque(maxlen=BATCHES_TO_RETAIN)
        self.coordinator_epoch = -1
        self.last_timestamp = -1
        self.txn_first_offset = -1  # Kafka's currentTxnFirstOffset; -1: no ongoing transaction

    def set_epoch(self, epoch: int) -> None:
        """Kafka's maybeUpdateProducerEpoch: a new epoch forgets the retained batches."""
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}
        self.txns = TxnTracker()

    def duplicate(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMeta | None:
        """The retained batch this one duplicates (same epoch and sequence range), if any."""
        entry = self.entries.get(producer_id)
        if entry is None or epoch != entry.epoch:
            return None
        for meta in entry.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None

    def has_ongoing(self, producer_id: int) -> bool:
        """Kafka's UnifiedLog.hasOngoingTransaction: the producer has a transaction open here."""
        entry = self.entries.get(producer_id)
        return entry is not None and entry.txn_first_offset >= 0

    def validate(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
                 is_transactional: bool = False) -> None:
        """Kafka's checks of a (non-duplicate) data batch: epoch, sequence, transactional flag."""
        entry = self.entries.get(producer_id)
        if entry is None:
            return
        _check_epoch(entry, producer_id, epoch)
        if epoch > entry.epoch:
            if first_seq != 0:
                raise OutOfOrderSequence(
                    f"Invalid sequence number for new epoch of producer {producer_id}: {epoch} (request epoch), "
                    f"{first_seq} (seq. number), {entry.epoch} (current producer epoch)")
        else:
            last = entry.last_seq
            if not (first_seq == last + 1 or (first_seq == 0 and last == 0x7FFFFFFF)):
                raise OutOfOrderSequence(
                    f"Out of order sequence number for producer {producer_id}: {first_seq} (incoming seq. number), "
                    f"{last} (current end sequence number)")
        if entry.txn_first_offset >= 0 and not is_transactional:
            raise InvalidTxnState(f"Expected transactional write from producer {producer_id}")

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
              is_transactional: bool = False) -> BatchMeta | None:
        """The retained batch this one duplicates, None if it may be appended, or an error."""
        duplicate = self.duplicate(producer_id, epoch, first_seq, last_seq)
        if duplicate is None:
            self.validate(producer_id, epoch, first_seq, last_seq, is_transactional)
        return duplicate

    def record(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int, is_transactional: bool = False,
               first_mark: int | None = None) -> None:
        """An appended data batch (Kafka's appendDataBatch after validation); call before `txns.appended`
        for its size, so that a transaction it begins starts at the right byte mark."""
        entry = self.entries.get(producer_id)
        if entry is None:
            entry = self.entries[producer_id] = ProducerEntry(epoch)
        entry.set_epoch(epoch)
        entry.batches.append(BatchMeta(first_seq, last_seq, first_offset, last_offset, timestamp))
        entry.last_timestamp = timestamp
        if is_transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = first_offset
            self.txns.begin(producer_id, first_offset, first_mark)

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """Kafka's checks of a marker from the coordinator (appendEndTxnMarker, origin COORDINATOR)."""
        entry = self.entries.get(producer_id)
        if entry is None:
            return
        _check_epoch(entry, producer_id, epoch)
        if coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(f"Invalid coordinator epoch for producerId {producer_id}: {coordinator_epoch} "
                             f"(zombie), {entry.coordinator_epoch} (current)",
                             ErrorCode.transaction_coordinator_fenced)

    def apply_marker(self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int, offset: int,
                     timestamp: int) -> bool:
        """An appended marker at `offset`: ends the producer's transaction here; whether it had one."""
        entry = self.entries.get(producer_id)
        if entry is None:
            entry = self.entries[producer_id] = ProducerEntry(epoch)
        first = entry.txn_first_offset
        entry.set_epoch(epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        entry.txn_first_offset = -1
        if first < 0:
            return False
        self.txns.complete(producer_id, first, offset, aborted=not commit)
        return True

    def rebuild(self, log) -> int:
        """Replay every producer batch header and marker of `log`; returns the batches seen."""
        offset, end, seen = log.log_start_offset, log.high_watermark, 0
        txns = self.txns
        while offset < end:
            chunk = log.read(offset, REBUILD_CHUNK)
            if not chunk:
                break
            for batch in iter_batches(chunk):
                offset = batch.next_offset
                size = batch.size
                if batch.producer_id >= 0:
                    seen += 1
                    if batch.is_control:
                        marker = read_marker(batch)
                        if marker is not None:
                            self.apply_marker(marker.producer_id, marker.producer_epoch, marker.commit,
                                              marker.coordinator_epoch, batch.base_offset, batch.max_timestamp)
                    else:
                        self.record(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                    increment_sequence(batch.base_sequence, batch.last_offset_delta),
                                    batch.base_offset, batch.last_offset, batch.max_timestamp,
                                    batch.is_transactional)
                txns.appended(size)
                txns.made_durable(size)
        txns.trim(log.log_start_offset)
        txns.unreplicated.clear()  # every marker read is below the high watermark
        return seen


def _check_epoch(entry: ProducerEntry, producer_id: int, epoch: int) -> None:
    """Kafka's ProducerAppendInfo.checkProducerEpoch, shared by data batches and markers: an older epoch is fenced."""
    if epoch < entry.epoch:
        raise InvalidProducerEpoch(
            f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen epoch {entry.epoch}")
