"""The network server: listens on the configured listeners and keeps the connections (net/connection.py);
stops gracefully (in-flight requests finish) on SIGTERM."""

from __future__ import annotations

import asyncio
import time

from coordinator.config import Config, Listener
from coordinator.net.connection import DISPATCH_BUDGET_SECONDS, Connection
from coordinator.net.connection_quotas import ConnectionQuotas
from coordinator.net.dispatch import Dispatcher
from coordinator.net.request_metrics import RequestMetrics


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
        self._servers: list[asyncio.AbstractServer] = []
        self._all_closed: asyncio.Event = asyncio.Event()
        self.bound: dict[str, Listener] = {}

    async def start(self) -> dict[str, Listener]:
        for listener in self.config.listeners:
            server = await self.loop.create_server(
                lambda: Connection(self), host=listener.host or None, port=listener.port,
                reuse_address=True, backlog=1024,
            )
            self._servers.append(server)
            sockname = server.sockets[0].getsockname()
            bound = Listener(listener.name, listener.host or sockname[0], sockname[1])
            self.bound[listener.name] = bound
        return self.bound

    def connection_gone(self) -> None:
        if not self.connections:
            self._all_closed.set()

    async def stop(self, grace_seconds: float = 10.0) -> None:
        """Stop accepting, let in-flight requests finish (up to the grace period), close all."""
        for server in self._servers:
            server.close()
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
