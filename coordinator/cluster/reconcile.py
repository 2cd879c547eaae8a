"""Desired vs actual ownership: which partitions this node takes, hands over and has lost.

`plan` is the pure decision (rows + live nodes + this node + what it holds -> a `Plan`); `Reconciler` carries a
plan out through the ownership SQL (storage/pg/ownership.py) and the node's `OwnershipHooks` in background tasks,
so that the membership loop never waits for a partition to load: the rows of every partition a plan takes are
acquired in one statement (a node taking over a dead one's share commits once, not once per partition: under load
each commit cost 0.2-0.5 s), then loaded a few at a time. A partition whose take or give-up is under way is left
out of later plans until that finishes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from coordinator.cluster.assignment import assign_topic, partition_counts
from storage.pg import ownership

log = structlog.get_logger(__name__)

Key = tuple[Any, int]  # (topic id, partition)


class OwnershipHooks(Protocol):
    """What a node does when it gains or loses a partition (the assembly wires these to the offsets runtime and
    the data plane)."""

    async def take(self, topic_id: Any, partition: int, epoch: int) -> None:
        """Load the partition (its writes are fenced by `epoch`)."""

    async def give_up(self, topic_id: Any, partition: int) -> None:
        """Finish what is queued, unload and close it: another node takes it next."""

    def lost(self, topic_id: Any, partition: int) -> None:
        """Unload at once: another node may own it already (fenced, or our lease may have lapsed)."""


class PartitionState(Protocol):
    """A kc_partitions row as the plan reads it (storage.pg.ownership.PartitionRow)."""

    @property
    def topic_id(self) -> Any: ...

    @property
    def partition(self) -> int: ...

    @property
    def owner(self) -> int | None: ...

    @property
    def epoch(self) -> int: ...


@dataclass(frozen=True)
class Plan:
    acquire: list[Key] = field(default_factory=list)
    """Desired here and free (no owner, a dead owner, or this node without holding it): bump the epoch, take."""
    release: list[tuple[Key, int, bool]] = field(default_factory=list)
    """(key, row epoch, held): owned here but desired elsewhere; a held one is given up before the release."""
    lose: list[Key] = field(default_factory=list)
    """Held here but the row moved on (another owner or epoch, or the topic is gone): fenced, unload at once."""


class DesiredOwners:
    """The desired owner of each partition for one set of live nodes (`assign_topic`, computed once per topic and
    partition count: a refresh re-plans every partition, and the hashes are the cost)."""

    def __init__(self, live_node_ids: Iterable[int]) -> None:
        self.live = tuple(sorted(set(live_node_ids)))
        self._owners: dict[tuple[Any, int], list[int]] = {}

    def owner(self, key: Key, partitions: int) -> int:
        owners = self._owners.get((key[0], partitions))
        if owners is None:
            owners = self._owners[(key[0], partitions)] = assign_topic(key[0], partitions, self.live)
        return owners[key[1]]


def plan(rows: Iterable[PartitionState], live_node_ids: Iterable[int], me: int,
         held: Mapping[Key, int], busy: Collection[Key] = frozenset(),
         desired: DesiredOwners | None = None) -> Plan:
    """What this node should do now. `held`: the partitions it has taken, with the epoch it took them at."""
    if desired is None or desired.live != tuple(sorted(set(live_node_ids))):
        desired = DesiredOwners(live_node_ids)
    live = set(desired.live)
    rows = list(rows)
    counts = partition_counts((row.topic_id, row.partition) for row in rows)
    result = Plan()
    seen: set[Key] = set()
    for row in rows:
        key = (row.topic_id, row.partition)
        seen.add(key)
        owner = row.owner
        if key in busy or (key not in held and owner != me and owner in live):
            continue  # work under way, or another live node's
        wanted_here = desired.owner(key, counts[row.topic_id]) == me
        if key in held:
            if owner != me or row.epoch != held[key]:
                result.lose.append(key)
            elif not wanted_here:
                result.release.append((key, row.epoch, True))
        elif owner == me:
            if wanted_here:
                result.acquire.append(key)  # re-taking bumps the epoch: it fences what we wrote before
            else:
                result.release.append((key, row.epoch, False))
        elif wanted_here:  # no owner, or a dead one
            result.acquire.append(key)
    result.lose.extend(key for key in held if key not in seen and key not in busy)
    return result


@dataclass
class OwnershipStore:
    """The ownership SQL the reconciler needs, bound to a pool (storage.pg.ownership by default; tests may
    pass their own functions)."""

    acquire: Callable[[list[Key], list[int]], Awaitable[dict[Key, int]]]
    """(keys, live node ids) -> the new epoch of each key taken (the refused ones left out)."""
    release: Callable[[Any, int, int], Awaitable[bool]]

    @classmethod
    def over(cls, pool: Any, me: int) -> OwnershipStore:
        async def acquire(keys: list[Key], live_node_ids: list[int]) -> dict[Key, int]:
            return await ownership.acquire_many(pool, keys, me, live_node_ids)

        async def release(topic_id: Any, partition: int, epoch: int) -> bool:
            return await ownership.release(pool, topic_id, partition, me, epoch)
        return cls(acquire, release)


class Reconciler:
    """Carries plans out for node `me`; `held` is what it owns and has loaded (key -> epoch)."""

    def __init__(self, hooks: OwnershipHooks, store: OwnershipStore, me: int, *, max_takes: int = 4) -> None:
        self.hooks = hooks
        self.store = store
        self.me = me
        self.held: dict[Key, int] = {}
        self._busy: dict[Key, asyncio.Task[None]] = {}
        self._takes = asyncio.Semaphore(max_takes)
        self._generation = 0  # bumped by lose_all: a take that started before it must not count as held
        self._stopped = False
        self._finishes = 0
        self._finished_at: dict[Key, int] = {}  # when each take or release ended, counted in `_finishes`
        self._desired = DesiredOwners(())
        self.changed: Callable[[], None] = lambda: None  # called when a take or release finishes

    def mark(self) -> int:
        """Call before reading the rows for `reconcile(..., as_of=mark)`: work that ends after this point is
        not judged by those rows (they may predate it: a take's own acquire, say)."""
        return self._finishes

    def reconcile(self, rows: Iterable[PartitionState], live_node_ids: Iterable[int],
                  as_of: int | None = None) -> Plan:
        """Plan against the rows and start the work (in background tasks); losses are handled at once."""
        if self._stopped:
            return Plan()
        live = list(live_node_ids)
        skip = set(self._busy)
        if as_of is not None:
            self._finished_at = {key: at for key, at in self._finished_at.items() if at > as_of}
            skip.update(self._finished_at)
        if self._desired.live != tuple(sorted(set(live))):
            self._desired = DesiredOwners(live)
        decided = plan(rows, live, self.me, self.held, skip, self._desired)
        for key in decided.lose:
            self._lose(key)
        for key, epoch, held in decided.release:
            self._start(key, self._release(key, epoch, held))
        if decided.acquire:
            generation = self._generation
            acquired = asyncio.ensure_future(self._acquire(decided.acquire, live, generation))
            for key in decided.acquire:
                self._start(key, self._take(key, acquired, generation))
        return decided

    def lose_all(self) -> None:
        """Our lease may have lapsed: everything held is lost now, and takes under way will not count."""
        self._generation += 1
        for key in list(self.held):
            self._lose(key)

    def retake(self, topic_id: Any, partition: int) -> None:
        """The owner found the partition unusable (its log broke): forget it, the next plan takes it again."""
        self.held.pop((topic_id, partition), None)

    async def stop(self) -> None:
        """Hand everything off at once (SIGTERM): wait for the work under way, then give up and release all."""
        self._stopped = True
        await asyncio.gather(*self._busy.values(), return_exceptions=True)
        handoffs = [self._release(key, epoch, True) for key, epoch in list(self.held.items())]
        await asyncio.gather(*handoffs, return_exceptions=True)

    async def drain(self) -> None:
        """Wait until no take or release is under way (tests; stop)."""
        while self._busy:
            await asyncio.gather(*self._busy.values(), return_exceptions=True)

    def _lose(self, key: Key) -> None:
        del self.held[key]
        try:
            self.hooks.lost(*key)
        except Exception:
            log.exception("cluster.lost_failed", topic_id=str(key[0]), partition=key[1])

    def _start(self, key: Key, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._busy[key] = task
        task.add_done_callback(lambda _: self._finished(key))

    def _finished(self, key: Key) -> None:
        self._busy.pop(key, None)
        self._finishes += 1
        self._finished_at[key] = self._finishes
        self.changed()

    async def _acquire(self, keys: list[Key], live: list[int], generation: int) -> dict[Key, int]:
        """The rows of `keys`, in one statement; {} when it failed (the next reconcile tries again)."""
        if generation != self._generation:
            return {}
        try:
            return await self.store.acquire(keys, live)
        except Exception:
            log.exception("cluster.acquire_failed", partitions=len(keys), action="the next reconcile tries again")
            return {}

    async def _take(self, key: Key, acquired: asyncio.Future[dict[Key, int]], generation: int) -> None:
        epoch = (await asyncio.shield(acquired)).get(key)  # shielded: one take cancelled leaves the others theirs
        if epoch is None:
            return
        async with self._takes:
            if generation != self._generation:
                return  # the row is ours but not held: the next plan takes it again, or releases it
            try:
                await self.hooks.take(key[0], key[1], epoch)
            except Exception:
                log.exception("cluster.take_failed", topic_id=str(key[0]), partition=key[1],
                              action="the next reconcile tries again")
                return
            if generation != self._generation:
                self.hooks.lost(*key)
            else:
                self.held[key] = epoch

    async def _release(self, key: Key, epoch: int, held: bool) -> None:
        if held:
            self.held.pop(key, None)
            try:
                await self.hooks.give_up(*key)
            except Exception:
                log.exception("cluster.give_up_failed", topic_id=str(key[0]), partition=key[1], action="unloading it")
                self.hooks.lost(*key)
        try:
            await self.store.release(key[0], key[1], epoch)
        except Exception:
            log.exception("cluster.release_failed", topic_id=str(key[0]), partition=key[1],
                          action="the next reconcile tries again")
