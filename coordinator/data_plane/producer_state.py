"""Idempotent-producer state of one partition, as Kafka's ProducerStateManager keeps it.

Per producer id: the current epoch and the metadata of its last 5 batches (Kafka's
NUM_BATCHES_TO_RETAIN, which is also the producer's max.in.flight bound). Rules, in
Kafka's order (UnifiedLog.analyzeAndValidateProducerState, ProducerAppendInfo):

1. a batch whose (epoch, first sequence, last sequence) equals a retained batch is a
   retried duplicate: it is acknowledged with that batch's offsets and not appended;
2. an epoch below the current one -> INVALID_PRODUCER_EPOCH;
3. a new (higher) epoch must start at sequence 0 -> else OUT_OF_ORDER_SEQUENCE_NUMBER;
4. the same epoch must continue at last sequence + 1 (wrapping at Integer.MAX_VALUE)
   -> else OUT_OF_ORDER_SEQUENCE_NUMBER;
5. a producer this partition has never seen may start at any sequence.

The state lives in memory only; `rebuild` replays batch headers from the log on
start-up (they carry producer id, epoch and sequences), which is what Kafka does
without snapshot files.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from coordinator.data_plane.validation import increment_sequence
from coordinator.errors import InvalidProducerEpoch, OutOfOrderSequence
from storage.batch import iter_batches

BATCHES_TO_RETAIN = 5
REBUILD_CHUNK = 8 << 20


class BatchMeta(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class ProducerEntry:
    __slots__ = ("epoch", "batches")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.batches: deque[BatchMeta] = deque(maxlen=BATCHES_TO_RETAIN)


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMeta | None:
        """The retained batch this one duplicates, None if it may be appended, or an error."""
        entry = self.entries.get(producer_id)
        if entry is None:
            return None
        if epoch == entry.epoch:
            for meta in entry.batches:
                if meta.first_seq == first_seq and meta.last_seq == last_seq:
                    return meta
        if epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen epoch {entry.epoch}")
        if epoch > entry.epoch:
            if first_seq != 0:
                raise OutOfOrderSequence(
                    f"Invalid sequence number for new epoch of producer {producer_id}: {epoch} (request epoch), "
                    f"{first_seq} (seq. number), {entry.epoch} (current producer epoch)")
            return None
        if entry.batches:
            last = entry.batches[-1].last_seq
            if not (first_seq == last + 1 or (first_seq == 0 and last == 0x7FFFFFFF)):
                raise OutOfOrderSequence(
                    f"Out of order sequence number for producer {producer_id}: {first_seq} (incoming seq. number), "
                    f"{last} (current end sequence number)")
        return None

    def record(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int) -> None:
        entry = self.entries.get(producer_id)
        if entry is None or epoch != entry.epoch:
            entry = self.entries[producer_id] = ProducerEntry(epoch)
        entry.batches.append(BatchMeta(first_seq, last_seq, first_offset, last_offset, timestamp))

    def rebuild(self, log) -> int:
        """Replay every idempotent batch header of `log`; returns the batches seen."""
        offset, end, seen = log.log_start_offset, log.high_watermark, 0
        while offset < end:
            chunk = log.read(offset, REBUILD_CHUNK)
            if not chunk:
                break
            for batch in iter_batches(chunk):
                offset = batch.next_offset
                if batch.producer_id >= 0 and not batch.is_control:
                    seen += 1
                    self.record(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                increment_sequence(batch.base_sequence, batch.last_offset_delta),
                                batch.base_offset, batch.last_offset, batch.max_timestamp)
        return seen
