"""Writes of records: `PendingWrite` (the completion of one append), the `RecordLog` interface
and `MemoryLog`, the in-memory log of unit tests.

A shard's write first settles its own bookkeeping (the offset store's writes in flight),
then runs the callbacks; `runtime.durable_log.DurableLog` is the real `RecordLog`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from coordinator.completion import run_callbacks, settle_future
from coordinator.records import Record

if TYPE_CHECKING:
    from coordinator.offsets.store import OffsetStore

log = structlog.get_logger(__name__)

WriteCallback = Callable[[BaseException | None], None]


class PendingWrite:
    """The completion of one append: awaitable, and with callbacks run synchronously.

    A shard's write first settles its own bookkeeping (`_store`'s writes in flight),
    then runs the callbacks: slots, not a closure per write.
    """

    __slots__ = ("records", "tails", "done", "error", "_callbacks", "_future", "_store")

    def __init__(self, records: list[Record], tails: list[bytes] | None = None) -> None:
        self.records = records
        self.tails = tails  # record_codec.encode_tails(records), when the writer made them already
        self.done = False
        self.error: BaseException | None = None
        self._callbacks: list[WriteCallback] = []
        self._future: asyncio.Future | None = None
        self._store: OffsetStore | None = None

    def add_callback(self, callback: WriteCallback) -> None:
        if self.done:
            callback(self.error)
        else:
            self._callbacks.append(callback)

    def resolve(self, error: BaseException | None = None) -> None:
        if self.done:
            return
        self.done = True
        self.error = error
        store = self._store
        if store is not None:
            self._store = None
            try:
                store.end(self, error)
            except Exception:
                log.exception("settling a write's offsets failed")
        callbacks, self._callbacks = self._callbacks, []
        if callbacks:
            run_callbacks(callbacks, error, "write callback failed")
        if self._future is not None:
            settle_future(self._future, None, error)

    def __await__(self) -> Generator[Any, None, None]:
        if not self.done:
            if self._future is None:
                self._future = asyncio.get_running_loop().create_future()
            yield from self._future.__await__()
        if self.error is not None:
            raise self.error


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

    def append(self, partition: int, pending: PendingWrite) -> None:
        self.records.setdefault(partition, []).extend(pending.records)
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
