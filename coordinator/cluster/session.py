"""NodeSession: the node's own PostgreSQL connection, which LISTENs on kc_cluster (and the channels added with
`listen`) and holds its session lock.

The lock (storage/pg/leases.py) lives exactly as long as this connection: when the process dies, its kernel
closes the connection, PostgreSQL frees the lock and the other nodes end the node's lease at once. So the
node must treat the end of this connection as the end of its lease too (ClusterMembership does), and it never
closes it while it still owns partitions: `close` comes after the hand-off and the deregistration.

A PostgreSQL that stops answering without closing its connections (frozen; its host lost or cut off, where TCP
keepalive or TCP_USER_TIMEOUT end the connection after seconds, but a SIGSTOPped server's kernel keeps it up) is
seen by a probe: `SELECT 1` every PROBE_EVERY_S, which must be answered within `answer_within_s`. Unanswered, the
connection is ended (not cancelled: a cancel request would go to the same silent server) and `unanswered` is
called with it, so that the node gives up every other connection to that server too (ConnectionSet.abandon).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from storage.pg import leases
from storage.pg.notify import CHANNEL

log = structlog.get_logger(__name__)

PROBE_EVERY_S = 1.0
ANSWER_SHARE_OF_SESSION = 1 / 3  # of broker.session.timeout.ms: how long PostgreSQL has to answer a probe
MIN_ANSWER_S = 1.0


def answer_within_s(session_ms: int) -> float:
    """How long the node's PostgreSQL has to answer its session's probe: a third of the session timeout (3 s by
    default), at least MIN_ANSWER_S."""
    return max(MIN_ANSWER_S, session_ms / 1000 * ANSWER_SHARE_OF_SESSION)


class NodeSession:
    def __init__(self, connect: Callable[[], Awaitable[Any]], notified: Callable[..., None], *,
                 answer_within_s: float = MIN_ANSWER_S,
                 unanswered: Callable[[Any], None] = lambda connection: None) -> None:
        self.connect = connect
        self.notified = notified
        self.answer_within_s = answer_within_s
        self.unanswered = unanswered
        self.channels: dict[str, Callable[..., None]] = {CHANNEL: notified}  # LISTENed at every open
        self.key: int | None = None  # of the session lock, while the connection is open
        self._connection: Any = None
        self._dropped = asyncio.Event()

    def is_open(self) -> bool:
        return self._connection is not None and not self._connection.is_closed()

    async def open(self) -> int:
        """Connect, take a fresh session lock and LISTEN; returns the lock's key."""
        connection = await self.connect()
        try:
            self._dropped.clear()
            connection.add_termination_listener(lambda _: self._dropped.set())
            async with asyncio.timeout(self.answer_within_s):
                key = await leases.hold_session_lock(connection)
                for channel, callback in self.channels.items():
                    await connection.add_listener(channel, callback)
        except TimeoutError:
            self.unanswered(connection)
            connection.terminate()
            raise
        except BaseException:
            connection.terminate()
            raise
        self._connection, self.key = connection, key
        return key

    def listen(self, channel: str, callback: Callable[..., None]) -> None:
        """LISTEN on `channel` too (asyncpg's listener signature), from the next `open` on."""
        self.channels[channel] = callback

    async def until_closed(self) -> None:
        """Until the connection drops (PostgreSQL restarted or unreachable, the backend terminated) or leaves a
        probe unanswered (then it is ended here)."""
        while self.is_open():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(PROBE_EVERY_S):  # is_closed() is the truth; the event only wakes us sooner
                    await self._dropped.wait()
            connection = self._connection
            if self.is_open() and not await self._answers(connection):
                log.warning("cluster.session_unanswered", within_s=self.answer_within_s,
                            action="ending every connection to PostgreSQL")
                self.unanswered(connection)
                connection.terminate()
        self.key = None

    async def _answers(self, connection: Any) -> bool:
        """Whether `connection` answers a probe within answer_within_s (a failure is an answer: if the connection
        ended, `until_closed` sees it). An unanswered probe is left to fail when the connection is ended."""
        probe = asyncio.ensure_future(connection.fetchval("SELECT 1"))
        done, _ = await asyncio.wait([probe], timeout=self.answer_within_s)
        probe.add_done_callback(lambda finished: finished.cancelled() or finished.exception())
        return bool(done)

    async def close(self) -> None:
        """End the session (and free its lock): after the hand-off, or when a test's node "dies"."""
        connection, self._connection, self.key = self._connection, None, None
        if connection is not None and not connection.is_closed():
            try:
                await connection.close(timeout=1)
            except Exception:
                connection.terminate()
