"""Transactional offsets held per producer until their marker: Kafka's OffsetMetadataManager
pendingTransactionalOffsets (per producer id), openTransactionsByGroup, replay with a producer id and
replayEndTransactionMarker. The one implementation of these rules: the live shard holds its pending offsets here
(coordinator/offsets/store.py, runtime/txn_offsets.py), and the loader's fold of a log (storage/latest.py, through
storage/txn_fold.py) applies them to raw records the same way, so what a restart finds pending, committed or
stale is what the live shard had.

Keys are tuples whose first item is the scope of "open transactions" (the group id, live; the fold, which
does not decode keys, uses the raw key itself); values are whatever the holder keeps (the live shard an
OffsetValue, the fold the raw value and its log offset).

A TxnOffsetCommit's records are written in a transactional batch; replaying them puts each offset here, under
its producer, not among the committed ones (coordinator/offsets/store.py). The producer's transaction marker
moves them to the committed offsets (COMMIT) or drops them (ABORT): `end`.

Kafka materializes a pending offset on COMMIT only if its record is newer in the log than the committed
offset's record (OffsetAndMetadata.recordOffset). The committed store keeps no log positions (it must stay
small), so the same rule is kept with an order number per pending offset (`seq`, increasing in log order:
live writes and loading replay in log order) and a `stale` flag, set when a committed offset newer in the log
than the pending one appears: a later non-transactional commit of the key (`committed`), or the
materialization of another producer's pending offset written later (`end`). The committed offset's log
position only grows between two tombstones of the key, and a tombstone drops the key's pending offsets
(`deleted`, as Kafka's replay of a tombstone), so "stale" is exactly "older than the committed one".

A live non-transactional commit replays before it is durable: it marks the offsets it finds current as marked
by it (`StaleMarks`), and they become stale only once it is durable -- a commit whose write fails takes its marks
back, so the marker still materializes what it would have (the pending offset is newer in the log than any
committed one then).

A marker ends the producer's offsets replayed before it (`end(..., upto)`): those with a smaller `seq`.
Deviation from Kafka, on purpose: a producer whose pending offsets of a group were all removed by tombstones
leaves the group's open transactions then (Kafka keeps it there until the partition reloads -- its marker finds
no offset of the group to end -- and the group can never expire meanwhile); a reload gives the same state.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=tuple[Hashable, ...])  # a key; its first item names its scope (the group)
V = TypeVar("V")  # what is held: the offset's value


class PendingOffset(Generic[V]):
    __slots__ = ("value", "seq", "stale", "marks")

    def __init__(self, value: V, seq: int, stale: bool = False) -> None:
        self.value = value
        self.seq = seq  # its place in the log, relative to the other pending offsets and markers
        self.stale = stale  # a committed offset newer in the log exists: a COMMIT will not materialize it
        self.marks: list[StaleMarks] | None = None  # in-flight commits of its key: stale once one is durable

    @property
    def is_stale(self) -> bool:
        """Stale, or about to be (a commit of its key in flight: writes settle in log order, before a marker)."""
        return self.stale or bool(self.marks)

    def __repr__(self) -> str:
        return f"PendingOffset({self.value!r}, seq={self.seq}, stale={self.stale}, marks={len(self.marks or ())})"


class StaleMarks:
    """The pending offsets one live write's non-transactional commits found current: stale once the write is
    durable (`settle(None)`), as they were if it failed."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[PendingOffset] = []  # of any value type

    def mark(self, entry: PendingOffset) -> None:
        if entry.marks is None:
            entry.marks = [self]
        elif self not in entry.marks:
            entry.marks.append(self)
        else:
            return
        self.entries.append(entry)

    def settle(self, error: BaseException | None) -> None:
        for entry in self.entries:
            marks = entry.marks
            if marks is not None and self in marks:
                marks.remove(self)
                if not marks:
                    entry.marks = None
                if error is None:
                    entry.stale = True
        self.entries = []


class PendingTxnOffsets(Generic[K, V]):
    """producer id -> {(group, topic, partition): PendingOffset}, and group -> its open producer ids."""

    __slots__ = ("by_producer", "by_group", "groups_of", "seq", "epochs")

    def __init__(self) -> None:
        self.by_producer: dict[int, dict[K, PendingOffset[V]]] = {}
        self.by_group: dict[Hashable, set[int]] = {}  # openTransactionsByGroup
        self.groups_of: dict[int, set[Hashable]] = {}  # the groups a producer is open in
        self.seq = 0
        self.epochs: dict[int, int] = {}  # the epoch of each open producer (its transactional writes)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    # --- replay -----------------------------------------------------------------------------

    def add(self, producer_id: int, key: K, value: V, stale: bool = False) -> PendingOffset[V] | None:
        """The replay of a transactional offset record; returns the pending offset it replaced (None: none)."""
        offsets = self.by_producer.get(producer_id)
        if offsets is None:
            offsets = self.by_producer[producer_id] = {}
        previous = offsets.get(key)
        offsets[key] = PendingOffset(value, self.next_seq(), stale)
        group = key[0]
        self.by_group.setdefault(group, set()).add(producer_id)
        self.groups_of.setdefault(producer_id, set()).add(group)
        return previous

    def committed(self, key: K, marks: StaleMarks | None = None) -> None:
        """A non-transactional commit of `key` was replayed: it is newer than every pending offset of the key
        (`marks`: a live write's, not durable yet: the offsets become stale when it is)."""
        producers = self.by_group.get(key[0])
        if producers:
            for producer_id in producers:
                entry = self.by_producer[producer_id].get(key)
                if entry is not None and not entry.stale:
                    if marks is None:
                        entry.stale = True
                    else:
                        marks.mark(entry)

    def deleted(self, key: K) -> None:
        """An offset tombstone of `key` was replayed: it removes the key's pending offsets (Kafka's replay); a
        producer left with no pending offset in the group is no longer open in it (see the module docstring)."""
        group = key[0]
        producers = self.by_group.get(group)
        if producers:
            for producer_id in list(producers):
                offsets = self.by_producer[producer_id]
                if offsets.pop(key, None) is not None and not any(k[0] == group for k in offsets):
                    self._close(producer_id, group)
                    if not offsets and producer_id not in self.groups_of:
                        del self.by_producer[producer_id]

    def saw_epoch(self, producer_id: int, epoch: int) -> None:
        if epoch > self.epochs.get(producer_id, -1):
            self.epochs[producer_id] = epoch

    def end(self, producer_id: int, commit: bool, upto: int) -> list[tuple[K, V]]:
        """The producer's marker, placed at `upto` in the order: its offsets replayed before it leave the pending
        ones; on COMMIT, returns those to commit (not stale), in log order. Later offsets of the producer stay."""
        offsets = self.by_producer.get(producer_id)
        if offsets is None:
            self.epochs.pop(producer_id, None)
            return []
        ended = {key: entry for key, entry in offsets.items() if entry.seq < upto}
        if len(ended) == len(offsets):
            del self.by_producer[producer_id]
            remaining: dict[K, PendingOffset[V]] = {}
        else:
            remaining = self.by_producer[producer_id] = {k: e for k, e in offsets.items() if e.seq >= upto}
        still_open = {key[0] for key in remaining}
        for group in self.groups_of.pop(producer_id, set()):
            if group in still_open:
                continue
            producers = self.by_group.get(group)
            if producers is not None:
                producers.discard(producer_id)
                if not producers:
                    del self.by_group[group]
        if still_open:
            self.groups_of[producer_id] = still_open
        else:
            self.epochs.pop(producer_id, None)
        if not commit:
            return []
        out: list[tuple[K, V]] = []
        for key, entry in sorted(ended.items(), key=lambda item: item[1].seq):
            if entry.is_stale:
                continue
            out.append((key, entry.value))
            self._older_now_stale(key, entry.seq)
        return out

    def _older_now_stale(self, key: K, seq: int) -> None:
        producers = self.by_group.get(key[0])
        if producers:
            for other in producers:
                entry = self.by_producer[other].get(key)
                if entry is not None and entry.seq < seq:
                    entry.stale = True

    def undo_add(self, producer_id: int, key: K, previous: PendingOffset[V] | None, opened: bool) -> None:
        """Take back one `add` of a write that failed (`opened`: that add opened the producer in the group)."""
        offsets = self.by_producer.get(producer_id)
        if offsets is None:
            return
        if previous is not None:
            offsets[key] = previous
        else:
            offsets.pop(key, None)
        if opened and not any(k[0] == key[0] for k in offsets):
            self._close(producer_id, key[0])
        if not offsets and producer_id not in self.groups_of:
            del self.by_producer[producer_id]
            self.epochs.pop(producer_id, None)

    def _close(self, producer_id: int, group: Hashable) -> None:
        producers = self.by_group.get(group)
        if producers is not None:
            producers.discard(producer_id)
            if not producers:
                del self.by_group[group]
        groups = self.groups_of.get(producer_id)
        if groups is not None:
            groups.discard(group)
            if not groups:
                del self.groups_of[producer_id]

    # --- reads ---------------------------------------------------------------------------------

    def has_open(self, group: Hashable) -> bool:
        """The group has open transactions (openTransactionsByGroup.containsKey)."""
        return group in self.by_group

    def entries(self) -> Iterator[tuple[int, K, PendingOffset[V]]]:
        for producer_id, offsets in self.by_producer.items():
            for key, entry in offsets.items():
                yield producer_id, key, entry

    def __len__(self) -> int:
        return sum(len(o) for o in self.by_producer.values())
