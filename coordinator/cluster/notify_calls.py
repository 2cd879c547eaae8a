"""The bookkeeping of a question asked over PostgreSQL's NOTIFY and answered by another node's NOTIFY (cluster mode:
the transaction verification, the share-group state requests): request ids, the questions waiting for their
answer, and the answers being sent (cancelled at stop)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class NotifyCalls(Generic[T]):
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[T]] = {}
        self._answering: set[asyncio.Task[None]] = set()

    def ask(self) -> tuple[int, asyncio.Future[T]]:
        """A new request id and the future its answer resolves; `done(request_id)` once no longer waited for."""
        request_id = next(self._ids)
        answered: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answered
        return request_id, answered

    @property
    def waiting(self) -> int:
        """How many questions wait for their answer."""
        return len(self._waiting)

    def done(self, request_id: int) -> None:
        self._waiting.pop(request_id, None)

    def answered(self, request_id: int, value: T) -> None:
        """An answer heard: the question waiting for it (if any still is) gets `value`."""
        waiting = self._waiting.get(request_id)
        if waiting is not None and not waiting.done():
            waiting.set_result(value)

    def answer(self, sending: Coroutine[Any, Any, None]) -> None:
        """Run `sending` (deciding and notifying an answer) in the background, until stop."""
        task = asyncio.ensure_future(sending)
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def stop(self) -> None:
        for task in list(self._answering):
            task.cancel()
        await asyncio.gather(*self._answering, return_exceptions=True)
        for waiting in self._waiting.values():
            waiting.cancel()
