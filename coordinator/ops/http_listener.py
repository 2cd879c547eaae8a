"""The operations endpoint (http.listener): metrics, health probes, the JSON views and the console.

    GET /metrics                    Prometheus text (coordinator/ops/metrics.py)
    GET /health/live                200 while the event loop answers
    GET /health/ready               200 when listening and every owned offsets partition is loaded, else 503
    GET /api/groups                 every group coordinated here, with its total lag
    GET /api/groups/{id}            one group: members, assignments, offsets with lag, rebalance history
    GET /groups/{id}/rebalances     the group's last rebalances (time, cause, generation, members in/out)
    GET /api/topics                 hosted topics with their partitions' log start and end
    GET /api/lag, /api/lag/{id}     lag over the last minutes, sampled here (coordinator/ops/lag_history.py)
    GET /                           the read-only console (static files in coordinator/ops/console/)

Everything is read-only: no route changes state. It runs on the server's own event loop (aiohttp),
so its handlers read the coordinator's state without locks. Its connections are counted and bounded in time
(ops/http_guard.py); with `http.auth=basic` every route but the probes asks for credentials (ops/http_auth.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from coordinator.config import ConfigError, Listener
from coordinator.net.connection_quotas import ConnectionQuotas
from coordinator.ops.http_auth import BasicAuth, http_exposure
from coordinator.ops.http_guard import GuardedConnection
from coordinator.ops.lag_history import LagHistory, LagSampler
from coordinator.ops.metrics import exposition, registry_for
from coordinator.ops.views import GroupViews, ServedNode, partition_states, rebalances
from coordinator.runtime.shard import ShardState
from coordinator.security.listener_config import failed_authentication_delay_ms

log = structlog.get_logger(__name__)

CONSOLE_DIR = Path(__file__).with_name("console")
#: The console loads only its own files and talks only to this server.
_SECURITY_HEADERS = {"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
                     "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def readiness(app: ServedNode) -> tuple[bool, dict[str, Any]]:
    """Ready: the Kafka listener is up and no owned offsets partition is still loading (failed ones
    are reported, and do not hold the node back: they will not load by waiting)."""
    states = partition_states(app.offsets.coordinator)
    listening = app.server is not None and bool(app.server.bound) and app.listening
    body = {"listening": listening, "partitions_owned": sum(map(len, states.values())),
            "partitions_loading": states["loading"], "partitions_failed": states["failed"]}
    return listening and not states["loading"], body


class HttpListener:
    def __init__(self, app: ServedNode, listener: Listener) -> None:
        self.app = app
        self.listener = listener
        self.views = GroupViews(app.services)
        self.registry = registry_for(app)
        config = app.services.config
        self.lag = LagSampler(LagHistory(self.views, config.http_lag_sample_interval_ms, config.http_lag_history_ms))
        self.runner: web.AppRunner | None = None
        self.server: asyncio.AbstractServer | None = None
        self.bound: Listener | None = None
        self.quotas = ConnectionQuotas.for_http(config)
        self.idle_seconds = config.http_connections_max_idle_ms / 1000.0
        self.auth = None if config.http_auth == "NONE" else BasicAuth(
            app.services.scram.lookup, [s.plain_users for s in config.securities.values() if s.plain_users],
            app.services.access.authorizer, failed_authentication_delay_ms(config.security_props, "http"))

    def web_app(self) -> web.Application:
        application = web.Application(middlewares=[_headers] if self.auth is None else [_headers, self.auth.middleware])
        application.add_routes([
            web.get("/metrics", self.metrics),
            web.get("/health/live", self.live),
            web.get("/health/ready", self.ready),
            web.get("/api/groups", self.groups),
            web.get("/api/groups/{group_id:.+}", self.group),  # a group id may hold "/"
            web.get("/groups/{group_id:.+}/rebalances", self.rebalances),
            web.get("/api/topics", self.topics),
            web.get("/", self.console),
            *self.lag.routes(),
        ])
        if CONSOLE_DIR.is_dir():
            application.add_routes([web.static("/console", CONSOLE_DIR, show_index=False)])
        return application

    async def start(self) -> Listener:
        config = self.app.services.config
        # aiohttp's keep-alive timer also runs from a connection's start: a request not whole by then is dropped
        runner = self.runner = web.AppRunner(self.web_app(), access_log=None, handle_signals=False,
                                             keepalive_timeout=self.idle_seconds)
        await runner.setup()
        handlers = runner.server
        assert handlers is not None
        try:
            self.server = await asyncio.get_running_loop().create_server(
                lambda: GuardedConnection(self.quotas, handlers, self.idle_seconds),
                self.listener.host or None, self.listener.port, reuse_address=True, backlog=128)
        except OSError as exc:  # e.g. the port is taken: one line and exit 2, as a bad setting
            await runner.cleanup()
            raise ConfigError(f"http.listener: cannot listen on {self.listener.host}:{self.listener.port}: "
                              f"{exc.strerror or exc}") from None
        host, port = self.server.sockets[0].getsockname()[:2]
        self.bound = Listener("http", self.listener.host or host, port)
        self.lag.start()
        log.info("http listening", host=self.bound.host, port=port, url=f"http://{self.bound.host}:{port}/",
                 auth=config.http_auth.lower())
        http_exposure(config.http_auth, self.app.services.access.enabled, self.listener.host)
        return self.bound

    async def stop(self) -> None:
        await self.lag.stop()
        if self.server is not None:
            self.server.close()  # accept no more; the runner's cleanup ends the open connections
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
        if self.server is not None:
            await self.server.wait_closed()
            self.server = None

    # --- routes ------------------------------------------------------------------------------

    async def metrics(self, _request: web.Request) -> web.Response:
        return web.Response(body=exposition(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def live(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "live"})

    async def ready(self, _request: web.Request) -> web.Response:
        ok, body = readiness(self.app)
        return web.json_response({"status": "ready" if ok else "not ready", **body}, status=200 if ok else 503)

    async def groups(self, _request: web.Request) -> web.Response:
        return web.json_response({"groups": self.views.summaries()})

    async def group(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group_id"]
        detail = self.views.detail(group_id)
        if detail is None:
            return web.json_response({"error": f"group {group_id!r} is not coordinated here"}, status=404)
        return web.json_response(detail)

    async def rebalances(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group_id"]
        shard = self.app.services.groups.shard_for(group_id)
        group = shard.groups.get(group_id) if shard.state is ShardState.ACTIVE else None
        if group is None:
            return web.json_response({"error": f"group {group_id!r} is not coordinated here"}, status=404)
        return web.json_response({"group_id": group_id, "rebalances": rebalances(group)})

    async def topics(self, _request: web.Request) -> web.Response:
        return web.json_response({"topics": self.views.topics()})

    async def console(self, _request: web.Request) -> web.StreamResponse:
        index = CONSOLE_DIR / "index.html"
        if not index.is_file():
            return web.Response(status=404, text="the console's files are not installed")
        return web.FileResponse(index)


@web.middleware
async def _headers(request: web.Request, handler: Any) -> web.StreamResponse:
    response = await handler(request)
    response.headers.update(_SECURITY_HEADERS)
    return response
