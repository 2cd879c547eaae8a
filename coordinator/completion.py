"""LateAnswer: a response finished later by a synchronous callback, not an asyncio future.

A durable OffsetCommit is answered when its fsync completes. With an asyncio future per
request, every completion costs the future, a closure, a `call_soon` per done-callback
and a loop callback per answer before the connection sees it (bench.commit_cpu: the
event loop's CPU per pipelined 10-partition commit fell ~7-10% with this class and the
commit fast path together). A LateAnswer calls its waiters at once, from
whatever settles it (a write's callback); the connection coalesces them into one loop
callback however many of its answers one flush completes.

It has the part of asyncio.Future's interface that the connection and the dispatcher
use (done, cancelled, result, exception, add/remove_done_callback), and `await` works
(tests await answers) through a loop future made only when someone awaits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any

import structlog

log = structlog.get_logger(__name__)

Waiter = Callable[["LateAnswer"], Any]


def run_callbacks(callbacks: list, argument: Any, failure: str) -> None:
    """callback(argument) for each; one that raises is logged and does not stop the others."""
    for callback in callbacks:
        try:
            callback(argument)
        except Exception:
            log.exception(failure)


def settle_future(future: asyncio.Future, value: Any, error: BaseException | None) -> None:
    """Complete the loop future an awaiter waits on (made only when someone awaits)."""
    if not future.done():
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)


class LateAnswer:
    __slots__ = ("_done", "_value", "_error", "_waiters", "_future")

    def __init__(self) -> None:
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._waiters: list[Waiter] | None = None
        self._future: asyncio.Future | None = None

    # --- settling (the first call wins: a write is settled once) ---------------------

    def set_result(self, value: Any) -> None:
        if not self._done:
            self._value = value
            self._settle()

    def set_exception(self, error: BaseException) -> None:
        if not self._done:
            self._error = error
            self._settle()

    def _settle(self) -> None:
        self._done = True
        waiters, self._waiters = self._waiters, None
        if waiters:
            run_callbacks(waiters, self, "late answer waiter failed")
        if self._future is not None:
            settle_future(self._future, self._value, self._error)

    # --- reading (asyncio.Future's names) --------------------------------------------

    def done(self) -> bool:
        return self._done

    def cancelled(self) -> bool:
        return False

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


class WriteAnswer(LateAnswer):
    """A LateAnswer that is itself a write's callback (shard.PendingWrite.add_callback):
    settled with `ok(*args)`, or `failed(*args, error)` if the write failed; an exception
    from either settles it with that exception (a request is never left unanswered).
    Functions plus arguments, not closures: no function objects made per request."""

    __slots__ = ("_ok", "_failed", "_args")

    def __init__(self, ok: Callable[..., Any], failed: Callable[..., Any], args: tuple = ()) -> None:
        LateAnswer.__init__(self)
        self._ok = ok
        self._failed = failed
        self._args = args

    def __call__(self, error: BaseException | None) -> None:
        try:
            value = self._ok(*self._args) if error is None else self._failed(*self._args, error)
        except Exception as exc:
            self.set_exception(exc)
            return
        self.set_result(value)
