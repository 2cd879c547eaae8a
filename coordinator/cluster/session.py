"""NodeSession: the node's own PostgreSQL connection, which LISTENs on kc_cluster (and the channels added with
`listen`) and holds its session lock.

The lock (storage/pg/leases.py) lives exactly as long as this connection: when the process dies, its kernel
closes the connection, PostgreSQL frees the lock and the other nodes end the node's lease at once. So the
node must treat the end of this connection as the end of its lease too (ClusterMembership does), and it never
closes it while it still owns partitions: `close` comes after the hand-off and the deregistration.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from storage.pg import leases
from storage.pg.notify import CHANNEL


class NodeSession:
    def __init__(self, connect: Callable[[], Awaitable[Any]], notified: Callable[..., None]) -> None:
        self.connect = connect
        self.notified = notified
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
            key = await leases.hold_session_lock(connection)
            for channel, callback in self.channels.items():
                await connection.add_listener(channel, callback)
        except BaseException:
            connection.terminate()
            raise
        self._connection, self.key = connection, key
        return key

    def listen(self, channel: str, callback: Callable[..., None]) -> None:
        """LISTEN on `channel` too (asyncpg's listener signature), from the next `open` on."""
        self.channels[channel] = callback

    async def until_closed(self) -> None:
        """Until the connection drops (PostgreSQL restarted or unreachable, the backend terminated)."""
        while self.is_open():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):  # is_closed() is the truth; the event only wakes us sooner
                    await self._dropped.wait()
        self.key = None

    async def close(self) -> None:
        """End the session (and free its lock): after the hand-off, or when a test's node "dies"."""
        connection, self._connection, self.key = self._connection, None, None
        if connection is not None and not connection.is_closed():
            try:
                await connection.close(timeout=1)
            except Exception:
                connection.terminate()
