"""A shard's transactional offsets: TxnOffsetCommit's writes and the transaction markers of its partition.

Kafka's OffsetMetadataManager.replay with a producer id, replayEndTransactionMarker, and the coordinator
runtime's transactional writes and scheduleTransactionCompletion, over rules/pending_offsets.py:

* `write(producer_id, producer_epoch, records)`: the TxnOffsetCommit records, replayed at once as pending
  offsets of the producer (`replay`: the function loading uses too), then appended as one transactional batch
  (PendingWrite.producer); a failed write takes its pending offsets back.
* `complete(producer_id, producer_epoch, commit, coordinator_epoch)`: appends the marker (a control batch);
  once it is durable, `replay_marker` ends the producer's pending offsets replayed before it: committed
  (where newer in the log than the committed offset) or dropped. A marker whose write failed changes nothing;
  the transaction coordinator sends it again.

Pending offsets whose producer's transaction is over (no marker will come) are ended by an ABORT marker written
through `complete` as well (transactions/runtime/orphans.py), so the same replay and loading apply.

Loading does the same from the log: storage.latest.LatestRecords holds transactional records per producer
until their marker and applies it by the same rules; what has no marker by the log end is replayed here as
pending (`replay` with the flag the fold computed), so a restart mid-transaction keeps it pending.

A non-transactional commit that marks a pending offset stale and then fails to be written takes the mark back
(rules/pending_offsets.StaleMarks). Known gaps: an offset tombstone (OffsetDelete, DeleteGroups, expiry) whose write
fails does not bring back the pending offsets of its key it removed (their marker then commits nothing for the key); a
commit written after the producer's COMMIT marker, still in flight when the marker is durable, keeps the marker
from materializing the key's pending offset (right when that commit is durable: it is newer) -- should that
commit fail, the key keeps its older committed offset until a reload gives the pending one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import InvalidProducerEpoch, KafkaError, NotCoordinator
from coordinator.offsets.pending import Key, ShardPendingOffsets
from coordinator.records.types import OffsetCommitRecord, OffsetValue, Record
from coordinator.runtime.writes import PendingWrite
from rules.pending_offsets import PendingOffset
from storage.control_records import ControlMarker

if TYPE_CHECKING:
    from coordinator.offsets.store import OffsetStore
    from coordinator.runtime.writes import RecordLog

log = structlog.get_logger(__name__)

Undo = list[tuple[int, Key, "PendingOffset[OffsetValue] | None", bool]]


class Shard(Protocol):
    """What this module uses of its runtime.shard.Shard (a Protocol: the shard imports this module)."""

    partition: int
    error: ErrorCode | None
    offsets: OffsetStore
    record_log: RecordLog

    def _offset_committed_to(self, group_id: str) -> None: ...

    def replay_all(self, records: Iterable[Record], live: bool = False, undo: list | None = None) -> object: ...


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
               undo: Undo | None = None, producer_epoch: int = -1) -> None:
        """Transactional offset records of `producer_id`, live and on load. A tombstone applies at once (Kafka's
        replay ignores the producer for tombstones); a value becomes pending (its group is created if need be,
        as any committed offset's replay does)."""
        pending = self.pending
        pending.saw_epoch(producer_id, producer_epoch)
        tombstones = []
        for record in records:
            if record.value is None:
                tombstones.append(record)
                continue
            group = record.group
            self.shard._offset_committed_to(group)
            key = (group, record.topic, record.partition)
            opened = producer_id not in pending.by_group.get(group, ())
            previous = pending.add(producer_id, key, record.value, stale)
            if undo is not None:
                undo.append((producer_id, key, previous, opened))
        if tombstones:
            self.shard.replay_all(tombstones)

    def replay_marker(self, producer_id: int, commit: bool, upto: int) -> int:
        """The producer's marker (placed at `upto` in the pending offsets' order): returns the offsets committed."""
        committed = self.pending.end(producer_id, commit, upto)
        if committed:
            self.shard.offsets.apply_all(
                ((group, topic, partition, value) for (group, topic, partition), value in committed),
                None, self.shard._offset_committed_to)
        log.debug("transaction marker replayed", partition=self.shard.partition, producer_id=producer_id,
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
        undo: Undo = []
        self.replay(producer_id, [r for r in records if type(r) is OffsetCommitRecord], undo=undo,
                    producer_epoch=producer_epoch)
        pending_write.add_callback(self._undo_on_failure(undo, self.pending))
        try:
            shard.record_log.append(shard.partition, pending_write)
        except Exception as exc:
            pending_write.resolve(exc)
        return pending_write

    def _undo_on_failure(self, undo: Undo, pending: ShardPendingOffsets) -> Callable[[BaseException | None], None]:
        def taken_back(error: BaseException | None) -> None:
            if error is None or pending is not self.pending:  # durable, or the shard was unloaded meanwhile
                return
            for producer_id, key, previous, opened in reversed(undo):
                pending.undo_add(producer_id, key, previous, opened)

        return taken_back

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
        """Write the producer's marker; its pending offsets end once it is durable (`replay_marker`)."""
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
        upto = pending.next_seq()

        def written(error: BaseException | None) -> None:
            if error is None and pending is self.pending:
                self.replay_marker(producer_id, commit, upto)

        write.add_callback(written)
        try:
            shard.record_log.append(shard.partition, write)
        except Exception as exc:
            write.resolve(exc)
        return write
