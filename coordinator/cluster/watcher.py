"""SessionWatcher: notice within milliseconds that the next node in the ring has died.

Each node watches its successor (the next live node id after its own, wrapping around) by asking, on a
connection of its own, for a shared lock on the successor's session lock: PostgreSQL grants it the moment the
successor's session ends -- a killed process's kernel closes the connection -- and the watcher then ends that
node's lease (`ended`). Polling pg_locks (ClusterMembership's orphan check) stays as the fallback for a node whose
watcher died with it; on its own it would leave clients a window in which they try the dead node's address, which
for a killed container starts to drop every packet some 80 ms after the kill and then costs each of them its
connection-setup timeout (10-30 s).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import structlog

from storage.pg import leases

log = structlog.get_logger(__name__)

RETRY_S = 0.5  # after the watcher's own connection failed
WAIT_SLICE_MS = 1000  # one lock wait; a changed target is taken up after at most this long
MAX_ENDED_KEYS = 1024  # remembered ended sessions (one per node death; the orphan check covers a forgotten one)


def successor(me: int, nodes: Iterable[Any]) -> tuple[int, int] | None:
    """(node id, session key) of the live node after `me` in node-id order, wrapping around; None when no
    other node holds a session lock. `nodes`: rows with node_id and session_key (leases.NodeRow)."""
    others = sorted((n.node_id, n.session_key) for n in nodes if n.node_id != me and n.session_key is not None)
    if not others:
        return None
    return next(((node_id, key) for node_id, key in others if node_id > me), others[0])


class SessionWatcher:
    def __init__(self, connect: Callable[[], Awaitable[Any]], ended: Callable[[int], Awaitable[None]]) -> None:
        self.connect = connect
        self.ended = ended  # called with the node id whose session ended
        self.target: tuple[int, int] | None = None
        self._ended_keys: set[int] = set()  # sessions seen ending: a refresh that read the lease before its end
        # must not make us watch (and report) one again; keys are random per session, never reused
        self._changed = asyncio.Event()
        self._connection: Any = None

    def watch(self, target: tuple[int, int] | None) -> None:
        """Watch `target` (node id, session key) from now on; a no-op when it is the one watched."""
        if target is not None and target[1] in self._ended_keys:
            target = None
        if target != self.target:
            self.target = target
            self._changed.set()

    async def run(self) -> None:
        try:
            while True:
                self._changed.clear()
                target = self.target
                if target is None:
                    await self._changed.wait()
                    continue
                try:
                    if await self._ended(target[1]):
                        log.info("cluster.watched_session_ended", node_id=target[0])
                        if len(self._ended_keys) >= MAX_ENDED_KEYS:
                            self._ended_keys.clear()
                        self._ended_keys.add(target[1])
                        if self.target == target:
                            self.target = None  # until a refresh names the next one
                        await self.ended(target[0])
                except Exception as exc:  # our own connection failed: the orphan check covers us meanwhile
                    log.warning("cluster.watcher_failed", watched=target[0], error=repr(exc), retry_s=RETRY_S)
                    await self._close()
                    await asyncio.sleep(RETRY_S)
        finally:
            await self._close()

    async def _ended(self, key: int) -> bool:
        """True when the session holding `key` ended; False when the target changed first. Asks in slices of
        WAIT_SLICE_MS, so a new target is taken up within one slice without cancelling a statement."""
        if self._connection is None or self._connection.is_closed():
            self._connection = await self.connect()
        while not self._changed.is_set():
            if await leases.session_ended_within(self._connection, key, WAIT_SLICE_MS):
                return True
        return False

    async def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            connection.terminate()
