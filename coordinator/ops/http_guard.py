"""The limits of the operations endpoint's connections (http.listener), which aiohttp does not have.

aiohttp accepts every connection and, by default, keeps one that never finishes its request for an hour: 1,000
half-sent `GET /metrics` requests took the server to its fd limit and no Kafka client could connect. Here each
connection is counted when it is accepted (`http.max.connections`, and `max.connections.per.ip` counted apart from
the Kafka listeners') and one over a limit is closed at once with a warning, before aiohttp sees it; the fds these
connections may use are kept out of the Kafka listeners' (connection_quotas.connection_cap). In time: aiohttp's
keep-alive timer, set to `http.connections.max.idle.ms`, closes a connection that has not sent a whole request that
long after it opened or after its last answer (a half-sent request does not restart it), and a connection that
leaves its answer unread that long (its transport stays full) is closed here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

import structlog

from coordinator.net.connection_quotas import ConnectionQuotas

log = structlog.get_logger(__name__)


class GuardedConnection(asyncio.Protocol):
    """One http.listener connection: counted, then handed to aiohttp's protocol (`make()`, made only once the
    connection is admitted), which gets every call of the transport's."""

    __slots__ = ("quotas", "make", "idle_seconds", "inner", "peer", "transport", "stalled")

    def __init__(self, quotas: ConnectionQuotas, make: Callable[[], asyncio.Protocol], idle_seconds: float) -> None:
        self.quotas = quotas
        self.make = make
        self.idle_seconds = idle_seconds
        self.inner: asyncio.Protocol | None = None
        self.peer = "?"
        self.transport: asyncio.Transport | None = None
        self.stalled: asyncio.TimerHandle | None = None  # armed while the transport is full

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        tcp = cast(asyncio.Transport, transport)
        peer = tcp.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        if not self.quotas.admit(str(peer[0])):  # over a limit: closed at once, logged there
            tcp.abort()
            return
        self.transport = tcp
        self.inner = self.make()
        self.inner.connection_made(tcp)

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return None if self.inner is None else self.inner.eof_received()

    def pause_writing(self) -> None:
        if self.inner is None:
            return
        if self.stalled is None:
            self.stalled = asyncio.get_running_loop().call_later(self.idle_seconds, self._unread)
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.stalled is not None:
            self.stalled.cancel()
            self.stalled = None
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        inner, self.inner = self.inner, None
        if inner is None:  # refused: never counted
            return
        if self.stalled is not None:
            self.stalled.cancel()
            self.stalled = None
        self.quotas.release(self.peer.rpartition(":")[0])
        self.transport = None
        inner.connection_lost(exc)

    def _unread(self) -> None:
        self.stalled = None
        if self.transport is not None:
            log.warning("http connection closed", peer=self.peer,
                        reason=f"its answer was left unread for {self.idle_seconds:g} s (http.connections.max.idle.ms)")
            self.transport.abort()
