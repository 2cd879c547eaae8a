"""A shard's transactional offsets: TxnOffsetCommit's writes and the transaction markers of its partition.

Kafka's OffsetMetadataManager.replay with a producer id, replayEndTransactionMarker, and the coordinator
runtime's transactional writes and completeTransaction, over rules/pending_offsets.py:

* `write(producer_id, producer_epoch, records)`: the TxnOffsetCommit records, replayed at once as pending
  offsets of the producer (`replay`: the function loading uses too), then appended as one transactional batch
  (PendingWrite.producer).
* `complete(producer_id, producer_epoch, commit, coordinator_epoch)`: the marker, replayed at once
  (`replay_marker`: it ends the producer's pending offsets replayed before it: committed where newer in the log
  than the committed offset, or dropped), then appended (a control batch), as Kafka's completeTransaction
  replays the marker before it appends it.

Both are live writes of the shard (runtime/shard.py): their replay goes into the write's journal
(runtime/journal.py), and a write that fails is taken back with every later write of the shard in flight -- a
failed marker changes nothing (the transaction coordinator sends it again), and a commit written after a COMMIT
marker that fails gives the key back the offset the marker committed.

Pending offsets whose producer's transaction is over (no marker will come) are ended by an ABORT marker written
through `complete` as well (transactions/runtime/orphans.py), so the same replay and loading apply.

Loading does the same from the log: storage.latest.LatestRecords holds transactional records per producer
until their marker and applies it by the same rules; what has no marker by the log end is replayed here as
pending (`replay` with the flag the fold computed), so a restart mid-transaction keeps it pending.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import InvalidProducerEpoch, KafkaError, NotCoordinator
from coordinator.offsets.pending import ShardPendingOffsets
from coordinator.records.types import OffsetCommitRecord, Record
from coordinator.runtime.journal import Journal
from coordinator.runtime.writes import PendingWrite
from storage.control_records import ControlMarker

if TYPE_CHECKING:
    from coordinator.offsets.store import OffsetStore

log = structlog.get_logger(__name__)


class Shard(Protocol):
    """What this module uses of its runtime.shard.Shard (a Protocol: the shard imports this module)."""

    partition: int
    error: ErrorCode | None
    offsets: OffsetStore
    journal: Journal | None

    def _offset_committed_to(self, group_id: str) -> None: ...

    def replay_all(self, records: Iterable[Record]) -> None: ...

    def write_with(self, pending: PendingWrite, replay: Callable[..., object], *args: Any) -> PendingWrite: ...


class ShardTxnOffsets:
    __slots__ = ("shard", "verifying")

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        #: producer id -> the guards of its TxnOffsetCommits waiting for another node's verification (Kafka's
        #: VerificationStateEntry): a marker of the producer written meanwhile voids them
        self.verifying: dict[int, list[object]] = {}

    @property
    def pending(self) -> ShardPendingOffsets:
        return self.shard.offsets.txn  # replaced with the store when the shard unloads

    # --- replay ---------------------------------------------------------------------------------

    def replay(self, producer_id: int, records: Iterable[OffsetCommitRecord], stale: bool = False,
               producer_epoch: int = -1) -> None:
        """Transactional offset records of `producer_id`, live (into the shard's open journal) and on load. A
        tombstone applies at once (Kafka's replay ignores the producer for tombstones); a value becomes pending
        (its group is created if need be, as any committed offset's replay does)."""
        pending = self.pending
        journal = self.shard.journal
        undo = None if journal is None else journal.add
        pending.saw_epoch(producer_id, producer_epoch, undo)
        tombstones = []
        for record in records:
            if record.value is None:
                tombstones.append(record)
                continue
            group = record.group
            self.shard._offset_committed_to(group)
            pending.add(producer_id, (group, record.topic, record.partition), record.value, stale, undo)
        if tombstones:
            if journal is not None:
                journal.records = tombstones  # the records its offsets list belongs to
            self.shard.replay_all(tombstones)

    def replay_marker(self, producer_id: int, commit: bool, upto: int) -> int:
        """The producer's marker (placed at `upto` in the pending offsets' order), live (into the shard's open
        journal) or not: returns the offsets committed. Live, the journal lists every key the marker ends, a
        committed one with the value it replaced, the others with their unchanged value: OffsetFetch reads them
        as in flight (require_stable: UNSTABLE_OFFSET_COMMIT) until the marker is durable, as Kafka reads at the
        last committed offset."""
        shard = self.shard
        pending, store, journal = self.pending, shard.offsets, shard.journal
        ended = [] if journal is None else [
            key for key, entry in pending.by_producer.get(producer_id, {}).items() if entry.seq < upto]
        committed = pending.end(producer_id, commit, upto, None if journal is None else journal.add)
        records = [OffsetCommitRecord(group, topic, partition, value)
                   for (group, topic, partition), value in committed]
        if records:
            store.apply_all(records, None if journal is None else journal.offsets, shard._offset_committed_to)
        if journal is not None:
            done = {record[:3] for record in records}
            for key in ended:
                if key not in done:
                    records.append(OffsetCommitRecord(*key, None))
                    journal.offsets.append(store.packed(*key))
            journal.records = records
        log.debug("transaction marker replayed", partition=shard.partition, producer_id=producer_id,
                  commit=commit, committed=len(committed))
        return len(committed)

    # --- writes ---------------------------------------------------------------------------------

    def write(self, producer_id: int, producer_epoch: int, records: list[Record],
              tails: list[bytes] | None = None) -> PendingWrite:
        """TxnOffsetCommit: replay `records` as the producer's pending offsets, append them as one
        transactional batch; the result completes when durable (a failed write is taken back first)."""
        shard = self.shard
        pending_write = PendingWrite(records, tails, producer=(producer_id, producer_epoch))
        if shard.error is ErrorCode.not_coordinator:
            pending_write.resolve(NotCoordinator(f"partition {shard.partition} is not loaded here"))
            return pending_write
        return shard.write_with(pending_write, self.replay, producer_id,
                                [r for r in records if type(r) is OffsetCommitRecord], False, producer_epoch)

    # --- verification guards ---------------------------------------------------------------------

    def guard(self, producer_id: int) -> object:
        """A guard for a verification of the producer's transaction asked of another node."""
        guard = object()
        self.verifying.setdefault(producer_id, []).append(guard)
        return guard

    def release(self, producer_id: int, guard: object) -> bool:
        """The verification answered: whether no marker of the producer was written here since `guard`."""
        guards = self.verifying.get(producer_id)
        if guards is None or guard not in guards:
            return False
        guards.remove(guard)
        if not guards:
            del self.verifying[producer_id]
        return True

    def complete(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int) -> PendingWrite:
        """Write the producer's marker, replayed at once (`replay_marker`) and taken back if its write fails."""
        shard = self.shard
        self.verifying.pop(producer_id, None)  # the transaction ends here: verifications in flight are void
        marker = ControlMarker(producer_id, producer_epoch, commit, coordinator_epoch)
        write = PendingWrite([], marker=marker)
        if shard.error is not None:
            write.resolve(KafkaError(f"offsets partition {shard.partition}: {shard.error.name}", shard.error))
            return write
        pending = self.pending
        known = pending.epochs.get(producer_id)
        if known is not None and producer_epoch < known:  # ProducerStateManager: a marker of an older epoch
            write.resolve(InvalidProducerEpoch(f"marker of producer {producer_id} at epoch {producer_epoch}, "
                                               f"its transaction here is at epoch {known}"))
            return write
        return shard.write_with(write, self.replay_marker, producer_id, commit, pending.next_seq())
