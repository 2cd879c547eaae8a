"""The network server: listens on the configured listeners and keeps the connections (net/connection.py);
stops gracefully (in-flight requests finish) on SIGTERM."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog

from coordinator.config import Config, Listener
from coordinator.net.connection import DISPATCH_BUDGET_SECONDS, Connection
from coordinator.net.connection_quotas import ConnectionQuotas
from coordinator.net.dispatch import Dispatcher
from coordinator.net.request_memory import RequestMemory
from coordinator.net.request_metrics import RequestMetrics
from coordinator.net.secured import SecuredConnection
from coordinator.net.tls_accept import TLS_HANDSHAKE_SECONDS, TlsAcceptor
from coordinator.security.listener_config import PLAINTEXT, ListenerSecurity
from coordinator.security.mechanisms import new_exchange
from coordinator.security.sasl_gate import SaslGate
from coordinator.security.tls import principal_of

log = structlog.get_logger(__name__)


def _no_credentials(_user: str, _mechanism: str) -> None:
    return None


class Server:
    def __init__(self, config: Config, dispatcher: Dispatcher, loop: asyncio.AbstractEventLoop,
                 metrics: RequestMetrics | None = None) -> None:
        self.config = config
        self.dispatcher = dispatcher
        self.loop = loop
        self.idle_seconds = config.connections_max_idle_ms / 1000.0
        self.clock = time.perf_counter  # the connections' dispatch budget and request latency are measured on it
        self.metrics = metrics  # what the connections count for /metrics (None: off)
        self.dispatch_budget = DISPATCH_BUDGET_SECONDS
        self.connections: set[Connection] = set()
        self.quotas = ConnectionQuotas.from_config(config)
        self.memory = RequestMemory(config.queued_max_request_bytes, loop)
        self._servers: list[asyncio.AbstractServer] = []
        self._acceptors: list[TlsAcceptor] = []  # SSL and SASL_SSL listeners: counted at accept
        # a handshake that does not finish is dropped after 30 s, or the idle time if shorter (as Kafka's idle expiry)
        self.handshake_seconds = min(TLS_HANDSHAKE_SECONDS, self.idle_seconds)
        self._all_closed: asyncio.Event = asyncio.Event()
        self.bound: dict[str, Listener] = {}
        # SCRAM credentials by (user, mechanism), for SASL listeners (the credential store's lookup)
        self.scram_credentials: Callable[[str, str], Any] = _no_credentials
        # told "host:port" of each connection that closes (share sessions live as long as their connection)
        self.on_connection_closed: list[Callable[[str], None]] = []

    async def start(self) -> dict[str, Listener]:
        for listener in self.config.listeners:
            security = self.config.security(listener.name)
            if security.uses_tls:
                acceptor = TlsAcceptor(self.loop, self.quotas, security, self._accepted, self.handshake_seconds)
                self._acceptors.append(acceptor)
                host, port = acceptor.start(listener.host, listener.port)
            else:
                server = await self.loop.create_server(
                    (lambda s=security: SecuredConnection(self, s)) if security.protocol != PLAINTEXT
                    else (lambda n=listener.name: Connection(self, n)),
                    host=listener.host or None, port=listener.port, reuse_address=True, backlog=1024,
                )
                self._servers.append(server)
                host, port = server.sockets[0].getsockname()[:2]
            self.bound[listener.name] = Listener(listener.name, listener.host or host, port)
        return self.bound

    def _accepted(self, security: ListenerSecurity, host: str, port: int) -> SecuredConnection:
        return SecuredConnection(self, security, (host, port))

    def tls_principal(self, security: ListenerSecurity, peercert: Any) -> str:
        """`User:<subject, mapped by ssl.principal.mapping.rules>`, or User:ANONYMOUS without a certificate."""
        assert security.tls is not None
        return principal_of(peercert, security.tls.principal_rules)

    def sasl_gate(self, security: ListenerSecurity, peer: str, reauth: tuple[str, str] | None = None) -> SaslGate:
        """The gate of a new SASL connection, or of a re-authentication (KIP-368) of (mechanism, principal)."""
        return SaslGate(security, self._answer_api_versions,
                        lambda mechanism: new_exchange(security, mechanism, self.scram_credentials), peer, reauth)

    def _answer_api_versions(self, frame: bytes) -> Any:
        return self.dispatcher.dispatch(frame, "", 0)

    def connection_gone(self, peer: str = "") -> None:
        for listener in self.on_connection_closed:
            try:
                listener(peer)
            except Exception:
                log.exception("a connection-closed listener failed", peer=peer)
        if not self.connections:
            self._all_closed.set()

    async def stop(self, grace_seconds: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish (up to the grace period), close all."""
        for server in self._servers:
            server.close()
        for acceptor in self._acceptors:
            await acceptor.stop()
        if self.connections:
            self._all_closed.clear()
            for connection in list(self.connections):
                connection.begin_close()
            try:
                await asyncio.wait_for(self._all_closed.wait(), grace_seconds)
            except TimeoutError:
                for connection in list(self.connections):
                    if connection.transport is not None:
                        connection.transport.abort()
        for server in self._servers:
            await server.wait_closed()
