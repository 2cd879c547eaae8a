"""Taking back a failed write: one journal per live write of a shard, and the shard's writes in flight.

The one mechanism (Kafka's answer is a SnapshotRegistry reverted to the failed batch's base offset; here the
snapshot is kept per write, as what each change replaced). A shard's live write replays its records at once
(runtime/shard.py); every part whose state that changes registers, in the write's `Journal`, what it needs to
take the change back:

* the committed offsets (offsets/store.py): `Journal.offsets`, the packed value (bytes, or None: there was none)
  each OffsetCommit record of `Journal.records` replaced, in record order (records of other types are skipped).
  `OffsetStore.apply_all` appends to it in the pass that applies the records: one list append per key, nothing
  per key once the write is durable; `OffsetStore.revert` takes it back and `OffsetStore.durable_view` reads it.
  A compiled caller (the OffsetCommit fast lane) applies offsets the same way: it appends each replaced packed
  value to `journal.offsets` and gives the records as `journal.records`.
* everything else, as an `Undo` (`Journal.add`): a function of no argument that puts one change back -- a group
  a tombstone removed, the simple group a commit made, the consumer groups as they were before their records, a
  classic group a downgrade put in place, a pending transactional offset added, made stale, removed or ended by
  a marker. Registered in the order of the changes, reverted newest first.

Changes an operation makes before its records are written (the online downgrade puts its classic group in
place first, as Kafka does) go into the shard's open journal (`Shard.open_journal`), which the write then
carries.

`WritesInFlight` keeps a shard's writes, each with its journal, in write order (the log's order) until the log
settles them. The log settles them in order (runtime/writes.py, RecordLog). A durable write drops its journal (a
deque pop). A failed write fails every later write still in flight with it -- the log lost them too (a failed
flush fails every append waiting and refuses later ones until it has cut itself back to its last good position,
storage/log_repair.py; the PostgreSQL log fails every later append), or, when the log refused the write alone
(too large, cannot be encoded), the later ones would otherwise be durable on top of a state without it -- and
their journals are reverted, newest first, down to the failed one's: the shard's state is then a replay of the
records that are durable. Only then are the writes' waiters told, in write order (PendingWrite.resolve).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import structlog

from coordinator.completion import Waiter
from coordinator.records.types import Record

log = structlog.get_logger(__name__)

Undo = Callable[[], None]  # puts one change back; runs once, with the state as the change left it


class Journal:
    """What one live write changed (see the module docstring)."""

    __slots__ = ("records", "offsets", "undos")

    def __init__(self, records: Sequence[Record] | None = None) -> None:
        #: the write's records: its OffsetCommit records, in order, are the keys of `offsets`
        self.records: Sequence[Record] = records if records is not None else []
        #: the packed value each OffsetCommit record of `records` replaced (None: there was none)
        self.offsets: list[bytes | None] = []
        self.undos: list[Undo] | None = None  # every other change, in order

    def add(self, undo: Undo) -> None:
        """Register how to take back one change (it runs if the write fails)."""
        undos = self.undos
        if undos is None:
            self.undos = [undo]
        else:
            undos.append(undo)


class Write(Protocol):
    """A write as the journal sees it (runtime.writes.PendingWrite)."""

    journal: Journal | None
    inflight: WritesInFlight | None

    def resolve(self, error: BaseException | None = None) -> None: ...

    def done(self) -> bool: ...

    def add_done_callback(self, waiter: Waiter) -> None: ...


class WritesInFlight:
    """A shard's writes from their replay until the log settles them, in write order."""

    __slots__ = ("_writes", "_revert_offsets")

    def __init__(self, revert_offsets: Callable[[Sequence[Record], list[bytes | None]], None]) -> None:
        self._writes: deque[Write] = deque()
        self._revert_offsets = revert_offsets  # the shard's OffsetStore.revert

    def __bool__(self) -> bool:
        return bool(self._writes)

    def __len__(self) -> int:
        return len(self._writes)

    def journals(self) -> Iterator[Journal]:
        """The journals of the writes in flight, oldest first."""
        for write in self._writes:
            if write.journal is not None:
                yield write.journal

    def writes(self) -> list[Write]:
        return list(self._writes)

    def add(self, write: Write, journal: Journal) -> None:
        """`write` (its records replayed, `journal` holding what that changed) is in flight until it settles."""
        write.journal = journal
        write.inflight = self
        self._writes.append(write)

    def settle(self, write: Write, error: BaseException | None) -> list[Write]:
        """The log settled `write`: durable (error None), or failed. A failure takes back it and every later write
        in flight, newest first, and returns the later ones (they must fail too: see the module docstring)."""
        writes = self._writes
        write.inflight = None
        if error is None:
            if writes and writes[0] is write:
                writes.popleft()
            else:  # a log settling out of order breaks its contract; the write is durable all the same
                try:
                    writes.remove(write)
                except ValueError:
                    pass
            return []
        if write not in writes:
            return []
        log.debug("failed write taken back", error=repr(error), later=len(writes) - 1 - writes.index(write))
        taken: list[Write] = []
        while True:
            last = writes.pop()
            last.inflight = None
            journal = last.journal
            if journal is not None:
                self.revert(journal)
            if last is write:
                break
            taken.append(last)
        taken.reverse()
        return taken

    def revert(self, journal: Journal) -> None:
        """Take back what `journal` holds, newest first. Each part's undos put back that part's own state, so only
        their order within a part matters (the offsets, apart, go back after the others)."""
        undos = journal.undos
        if undos:
            for undo in reversed(undos):
                try:
                    undo()
                except Exception:  # one part's bug must not keep the others from their state
                    log.exception("taking back a failed write's change failed", undo=repr(undo))
        if journal.offsets:
            self._revert_offsets(journal.records, journal.offsets)

    def drop(self) -> list[Write]:
        """Forget every write in flight without taking anything back (the shard unloads: its state goes too)."""
        writes = list(self._writes)
        self._writes.clear()
        for write in writes:
            write.inflight = None
        return writes
