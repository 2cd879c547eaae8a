"""Writes of records: `PendingWrite` (the completion of one append), the `RecordLog` interface
and `MemoryLog`, the in-memory log of unit tests.

A shard's write first settles its own bookkeeping (the offset store's writes in flight),
then runs the callbacks; `runtime.durable_log.DurableLog` is the real `RecordLog`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import structlog

from coordinator.completion import Completion
from coordinator.records.types import Record
from storage.control_records import ControlMarker

if TYPE_CHECKING:
    from coordinator.offsets.store import OffsetStore

log = structlog.get_logger(__name__)

WriteCallback = Callable[[BaseException | None], None]


class PendingWrite(Completion):
    """The completion of one append: a Completion (settled with None, or the write's error)
    carrying its records. A shard's write first settles its own bookkeeping (`_store`'s
    writes in flight), then the waiters run, synchronously: slots, not a closure per write.
    """

    __slots__ = ("records", "tails", "_store", "producer", "marker")

    def __init__(self, records: list[Record], tails: list[bytes] | None = None,
                 store: OffsetStore | None = None, producer: tuple[int, int] | None = None,
                 marker: ControlMarker | None = None) -> None:
        """`store`: the offset store that tracks this write in flight (OffsetStore.begin), settled first.
        `producer`: (producer id, epoch) of a transactional write (TxnOffsetCommit): its records go into a
        batch of their own with the transactional attribute and those header fields, as Kafka's coordinator
        runtime writes them. `marker`: a transaction marker (no records): the log writes its control batch."""
        Completion.__init__(self)
        self.records = records
        self.tails = tails  # log_codec.encode_tails(records), when the writer made them already
        self._store = store
        self.producer = producer
        self.marker = marker

    def resolve(self, error: BaseException | None = None) -> None:
        """What the log calls once the records are durable (None) or will not be (the error)."""
        if self._done:
            return
        store = self._store
        if store is not None:
            self._store = None
            try:
                store.end(self, error)
            except Exception:
                log.exception("settling a write's offsets failed")
        self._error = error  # settled with None, or the error
        self._settle()

    def add_callback(self, callback: WriteCallback) -> None:
        """`callback(error or None)` once settled: the form the group operations use
        (coordinator/groups/); handlers derive their answers with `then`."""
        self.add_done_callback(lambda write: callback(write.exception()))


class RecordLog(Protocol):
    def append(self, partition: int, pending: PendingWrite) -> None:
        """Make `pending.records` durable, then call `pending.resolve(error_or_None)`."""


class MemoryLog:
    """Keeps every record (tests assert on them); completes writes on the next loop turn.

    With `auto=False` writes stay pending until `complete()` or `fail()`, so tests can
    hold a write open and race other requests against it without an event loop.
    """

    def __init__(self, auto: bool = True) -> None:
        self.auto = auto
        self.records: dict[int, list[Record]] = {}
        self.pending: list[PendingWrite] = []
        self.txn_writes: dict[int, list[PendingWrite]] = {}  # transactional writes and markers, in order

    def append(self, partition: int, pending: PendingWrite) -> None:
        self.records.setdefault(partition, []).extend(pending.records)
        if pending.producer is not None or pending.marker is not None:
            self.txn_writes.setdefault(partition, []).append(pending)
        if self.auto:
            asyncio.get_running_loop().call_soon(pending.resolve)
        else:
            self.pending.append(pending)

    def all_records(self) -> list[Record]:
        return [record for records in self.records.values() for record in records]

    def complete(self) -> None:
        pending, self.pending = self.pending, []
        for write in pending:
            write.resolve()

    def fail(self, error: BaseException) -> None:
        pending, self.pending = self.pending, []
        for write in pending:
            write.resolve(error)
