"""Completion: an answer that arrives later, settled by a synchronous callback, not an asyncio future.

The one type for "later" in the coordinator: a shard's write (runtime.writes.PendingWrite is a
Completion carrying its records), a handler's delayed answer (JoinGroup, SyncGroup, a durable
OffsetCommit) and what a connection waits on. asyncio futures remain only where asyncio hands
one out (the Task of a coroutine handler, an executor's future).

Why not an asyncio future: a durable OffsetCommit is answered when its fsync completes. With a
future per request, every completion costs the future, a closure, a `call_soon` per
done-callback and a loop callback per answer before the connection sees it (bench.profile.commit_cpu:
the event loop's CPU per pipelined 10-partition commit fell ~7-10% with this class and the
commit fast path together). A Completion calls its waiters at once, from whatever settles it
(a write's flush); the connection coalesces them into one loop callback however many of its
answers one flush completes.

It has the part of asyncio.Future's interface that the connection and the dispatcher use (done,
cancel, cancelled, result, exception, add/remove_done_callback), and `await` works through a
loop future made only when someone awaits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any

import structlog

log = structlog.get_logger(__name__)

Waiter = Callable[["Completion"], Any]


class Completion:
    __slots__ = ("_done", "_value", "_error", "_waiters", "_future", "_cancelled")

    def __init__(self) -> None:
        self._done = False
        self._cancelled = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._waiters: list[Waiter] | None = None
        self._future: asyncio.Future | None = None

    # --- settling (the first call wins: an answer is settled once) --------------------

    def set_result(self, value: Any) -> None:
        if not self._done:
            self._value = value
            self._settle()

    def set_exception(self, error: BaseException) -> None:
        if not self._done:
            self._error = error
            self._settle()

    def cancel(self) -> bool:
        """Nobody wants the answer any more (its connection closed): a later settle is dropped."""
        if self._done:
            return False
        self._cancelled = True
        self._error = asyncio.CancelledError()
        self._settle()
        return True

    def _settle(self) -> None:
        self._done = True
        waiters, self._waiters = self._waiters, None
        if waiters:
            for waiter in waiters:  # one that raises is logged and does not stop the others
                try:
                    waiter(self)
                except Exception:
                    log.exception("completion waiter failed")
        future = self._future
        if future is not None and not future.done():
            if self._error is None:
                future.set_result(self._value)
            else:
                future.set_exception(self._error)

    # --- reading (asyncio.Future's names) --------------------------------------------

    def done(self) -> bool:
        return self._done

    def cancelled(self) -> bool:
        return self._cancelled

    def result(self) -> Any:
        if not self._done:
            raise asyncio.InvalidStateError("the answer is not ready")
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self) -> BaseException | None:
        if not self._done:
            raise asyncio.InvalidStateError("the answer is not ready")
        return self._error

    def add_done_callback(self, waiter: Waiter) -> None:
        """`waiter(self)` when settled: at once (synchronously) if it already is."""
        if self._done:
            waiter(self)
        elif self._waiters is None:
            self._waiters = [waiter]
        else:
            self._waiters.append(waiter)

    def remove_done_callback(self, waiter: Waiter) -> int:
        waiters = self._waiters
        if not waiters:
            return 0
        kept = [w for w in waiters if w != waiter]
        self._waiters = kept
        return len(waiters) - len(kept)

    def __await__(self) -> Generator[Any, None, Any]:
        if not self._done:
            if self._future is None:
                self._future = asyncio.get_running_loop().create_future()
            return (yield from self._future.__await__())
        return self.result()

    # --- deriving --------------------------------------------------------------------

    def then(self, ok: Callable[..., Any], failed: Callable[..., Any] | None = None, *args: Any) -> Completion:
        """The answer made from this one: `ok(*args, value)` once it succeeds, `failed(*args, error)` if
        it fails (without `failed`, the same error). An exception from either settles it with that
        exception: a request is never left unanswered. At once if this one is settled already.
        Functions plus arguments, not closures: no function object is made per request."""
        derived = _Derived(ok, failed, args)
        self.add_done_callback(derived)
        return derived

    def now_or_then(self, ok: Callable[..., Any], *args: Any) -> Any:
        """`ok(*args, value)` itself if this is settled already (its error raised here), else
        `then(ok, None, *args)`: a handler whose domain answered before it returned answers at once."""
        if self._done:
            return ok(*args, self.result())
        return self.then(ok, None, *args)


class _Derived(Completion):
    """What `Completion.then` returns: a Completion that is also the waiter settling it."""

    __slots__ = ("_ok", "_failed", "_args")

    def __init__(self, ok: Callable[..., Any], failed: Callable[..., Any] | None, args: tuple) -> None:
        Completion.__init__(self)
        self._ok = ok
        self._failed = failed
        self._args = args

    def __call__(self, source: Completion) -> None:
        error = source._error
        try:
            if error is None:
                value = self._ok(*self._args, source._value)
            elif self._failed is None:
                self.set_exception(error)
                return
            else:
                value = self._failed(*self._args, error)
        except Exception as exc:
            self.set_exception(exc)
            return
        self.set_result(value)


async def settled(answer: Any) -> Any:
    """A handler's answer, awaited if it is awaitable (a coroutine, a Completion, a Task)."""
    return (await answer) if hasattr(answer, "__await__") else answer
