"""Writes of records: `PendingWrite` (the completion of one append), the `RecordLog` interface
and `MemoryLog`, the in-memory log of unit tests.

A shard's write first settles its journal (runtime/journal.py: a failed write is taken back,
with every later write of the shard still in flight), then runs the callbacks;
`runtime.durable_log.DurableLog` is the real `RecordLog`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

import structlog

from coordinator.completion import Completion
from coordinator.errors import EarlierWriteFailed
from coordinator.records.types import Record
from coordinator.runtime.journal import Journal, WritesInFlight
from storage.control_records import ControlMarker

log = structlog.get_logger(__name__)

WriteCallback = Callable[[BaseException | None], None]


class PendingWrite(Completion):
    """The completion of one append: a Completion (settled with None, or the write's error)
    carrying its records. A shard's write first settles its journal (`inflight`: the shard's
    writes in flight, runtime/journal.py), then the waiters run, synchronously: slots, not a
    closure per write.
    """

    __slots__ = ("records", "tails", "producer", "marker", "journal", "inflight")

    def __init__(self, records: list[Record], tails: list[bytes] | None = None,
                 producer: tuple[int, int] | None = None, marker: ControlMarker | None = None) -> None:
        """`producer`: (producer id, epoch) of a transactional write (TxnOffsetCommit): its records go into a
        batch of their own with the transactional attribute and those header fields, as Kafka's coordinator
        runtime writes them. `marker`: a transaction marker (no records): the log writes its control batch."""
        Completion.__init__(self)
        self.records = records
        self.tails = tails  # log_codec.encode_tails(records), when the writer made them already
        self.producer = producer
        self.marker = marker
        self.journal: Journal | None = None  # what the write changed, while it is in flight (a shard's write)
        self.inflight: WritesInFlight | None = None  # the shard's writes in flight, until this one settles

    def resolve(self, error: BaseException | None = None) -> None:
        """What the log calls once the records are durable (None) or will not be (the error: the log failed,
        and every later write of the shard in flight fails with the same error)."""
        self._finish(error, error)

    def refuse(self, error: BaseException) -> None:
        """What the log calls when it refuses this write alone (too large, cannot be encoded) and goes on: it
        fails with `error`; the later writes of its shard in flight fail with EarlierWriteFailed (retriable)."""
        self._finish(error, None)

    def _finish(self, error: BaseException | None, later_error: BaseException | None) -> None:
        if self._done:
            return
        inflight = self.inflight
        later = None
        if inflight is not None:
            try:
                later = inflight.settle(self, error)
            except Exception:
                log.exception("settling a write's journal failed")
        self.journal = None
        self._error = error  # settled with None, or the error
        self._settle()
        if later:  # taken back with this one (runtime/journal.py): told after it, in write order
            if later_error is None:
                later_error = EarlierWriteFailed(f"an earlier write of the partition failed: {error!r}")
            for write in later:
                write.resolve(later_error)

    def cancel(self) -> bool:
        """A write cannot be called off: only its log settles it."""
        return False

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
