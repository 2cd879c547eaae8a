"""Pending transactional offsets that no marker will ever end, aborted.

A TxnOffsetCommit's offsets stay pending in the group's offsets partition until the producer's transaction
marker (runtime/txn_offsets.py), and the transaction coordinator writes markers only into the partitions of
the transaction. Offsets pending for a producer whose transaction is over -- written for a partition the
transaction never added (before TxnOffsetCommit was verified, or in cluster mode by a transaction another
node coordinates), or left by any other path that lost their marker -- would stay pending for ever: OffsetFetch
with require_stable answers UNSTABLE_OFFSET_COMMIT and every read_committed consumer of the group stalls (Kafka
has the same hazard, and `kafka-transactions.sh abort` to end such a hanging transaction by hand).

Here the transaction coordinator's own knowledge ends them: when no marker of a producer id can come any more
(views.markers_may_come is False: no transaction of it ongoing or ending, no transition in flight) while it
has offsets pending in an offsets partition, an ABORT marker is written there -- the same control batch a
transaction coordinator writes, replayed as any marker (`ShardTxnOffsets.complete`), so a restart or another
node loading the partition sees them ended too. The decision and the marker's place among the pending offsets
(`complete` takes it at once) happen in one loop turn: an offset written after it, by the producer's next
transaction, is not touched.

When: at once when a transaction completes (CompleteCommit/CompleteAbort durable: the producer's offsets left
pending anywhere here are orphans), after an offsets partition or a transaction state partition loads (what a
restart found pending), and every `transaction.abort.timed.out.transaction.cleanup.interval.ms` (a marker
write that failed; a transactional id that expired). A producer id no transactional id here holds is known to
be over only when this node coordinates every transaction (all __transaction_state partitions hosted and
loaded: local mode). In cluster mode the offsets of a producer whose transactional id another node coordinates
are not looked at: TxnOffsetCommit's verification (over PostgreSQL) keeps new ones from being written outside
their transaction, and what an earlier version left so stays until both partitions are on one node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import structlog

from coordinator.runtime.shard import Shard, ShardState
from coordinator.transactions.descriptions import by_producer, markers_may_come
from coordinator.transactions.runtime.txn_coordinator import Loading
from coordinator.transactions.txn_metadata import TxnMetadata

if TYPE_CHECKING:
    from coordinator.runtime.group_coordinator import GroupCoordinator
    from coordinator.transactions.runtime.txn_coordinator import TransactionCoordinator

log = structlog.get_logger(__name__)


class Verdict(NamedTuple):
    """What this node's transaction coordinator says of a producer id: `ended` (no marker of it can come), the
    epoch to write an ABORT marker with (its transactional id's epoch, if it still holds the producer id) and
    the coordinator epoch of its __transaction_state partition."""

    ended: bool
    producer_epoch: int
    coordinator_epoch: int


NOT_ENDED = Verdict(False, -1, -1)
Lookup = Callable[[int], "Verdict | None"]  # None: not known here


def verdict_of(md: TxnMetadata, producer_id: int, coordinator_epoch: int) -> Verdict:
    if markers_may_come(md, producer_id):
        return NOT_ENDED
    return Verdict(True, md.producer_epoch if md.producer_id == producer_id else -1, coordinator_epoch)


def producer_lookup(txn: TransactionCoordinator) -> Lookup:
    """A verdict per producer id over the transactions of every loaded partition (one pass, for a sweep)."""
    found: dict[int, tuple[TxnMetadata, int]] = {}
    every_one = len(txn.partitions) == txn.settings.num_partitions
    coordinator_epoch = 0
    for part in list(txn.partitions.values()):
        if part.state is not Loading.ACTIVE:
            every_one = False
            continue
        coordinator_epoch = max(coordinator_epoch, part.coordinator_epoch)
        for producer_id, md in by_producer(part.txns.values()).items():
            seen = found.get(producer_id)
            if seen is None or (seen[0].producer_id != producer_id and md.producer_id == producer_id):
                found[producer_id] = (md, part.coordinator_epoch)  # a current holder wins over a previous one
    unknown_ended = Verdict(True, -1, coordinator_epoch) if every_one else None

    def lookup(producer_id: int) -> Verdict | None:
        hit = found.get(producer_id)
        if hit is None:
            return unknown_ended  # held by no transactional id: over, if every transaction is coordinated here
        return verdict_of(hit[0], producer_id, hit[1])

    return lookup


class OrphanedOffsets:
    """Ends the orphaned pending offsets of this node's offsets partitions (see the module docstring)."""

    def __init__(self, txn: TransactionCoordinator, groups: GroupCoordinator) -> None:
        self.txn = txn
        self.groups = groups
        self._writing: set[tuple[int, int]] = set()  # (offsets partition, producer id): an ABORT in flight
        self._soon: asyncio.Handle | None = None
        self.aborted = 0  # ABORT markers written (tests; each is logged)

    # --- triggers ------------------------------------------------------------------------------

    def transaction_ended(self, md: TxnMetadata, coordinator_epoch: int) -> None:
        """A transaction of `md` completed (its CompleteCommit/CompleteAbort is durable, all its markers written):
        whatever its producer id still has pending here will never get a marker."""
        producer_id = md.producer_id
        shards = [s for s in self._active_shards() if producer_id in s.offsets.txn.by_producer]
        if shards:
            verdict = verdict_of(md, producer_id, coordinator_epoch)
            for shard in shards:
                self._resolve(shard, producer_id, verdict)

    def sweep_soon(self) -> None:
        """A sweep on the next loop turn (after a partition loads: several loading together make one sweep)."""
        if self._soon is None:
            self._soon = asyncio.get_running_loop().call_soon(self._sweep_now)

    def _sweep_now(self) -> None:
        self._soon = None
        try:
            self.sweep()
        except Exception:
            log.exception("sweeping orphaned transactional offsets failed")

    def sweep(self) -> int:
        """Every loaded offsets partition's pending producers against the coordinator's transactions; returns
        how many ABORT markers were started."""
        lookup: Lookup | None = None
        started = 0
        for shard in self._active_shards():
            producers = shard.offsets.txn.by_producer
            if not producers:
                continue
            if lookup is None:
                lookup = producer_lookup(self.txn)
            for producer_id in list(producers):
                verdict = lookup(producer_id)
                if verdict is not None:
                    started += self._resolve(shard, producer_id, verdict)
        return started

    # --- the marker ----------------------------------------------------------------------------

    def _active_shards(self) -> list[Shard]:
        return [s for s in self.groups.all_shards() if s.state is ShardState.ACTIVE]

    def _resolve(self, shard: Shard, producer_id: int, verdict: Verdict) -> int:
        key = (shard.partition, producer_id)
        pending = shard.offsets.txn
        if not verdict.ended or key in self._writing or producer_id not in pending.by_producer:
            return 0
        # never below the epoch of the producer's offsets here (the marker would be refused as a zombie's)
        epoch = max(verdict.producer_epoch, pending.epochs.get(producer_id, 0), 0)
        groups = sorted(map(str, pending.groups_of.get(producer_id, ())))  # group ids
        count = len(pending.by_producer[producer_id])
        self._writing.add(key)
        write = shard.txn.complete(producer_id, epoch, False, verdict.coordinator_epoch)

        def written(error: BaseException | None) -> None:
            self._writing.discard(key)
            if error is None:
                self.aborted += 1
            else:
                log.warning("aborting orphaned transactional offsets failed; the next sweep tries again",
                            partition=shard.partition, producer_id=producer_id, error=repr(error))

        write.add_callback(written)
        log.warning("aborting transactional offsets no transaction marker will end", partition=shard.partition,
                    producer_id=producer_id, producer_epoch=epoch, offsets=count, groups=groups)
        return 1
