"""Connections to the storage URL (one host or several), the connection pool of cluster mode, and which driver
errors mean "PostgreSQL is unavailable".

Every connection a node or a tool opens goes through `connect`: the pool's, the node's session (LISTEN, session
lock), the ring watcher's, dump-log's and the Spark jobs'. asyncpg parses the URL, authenticates and checks
target_session_attrs; with several hosts `connect` hands it one host at a time, in the URL's order, as libpq
does, because asyncpg's own timeout covers the whole list: a first host that never answers (a frozen or
unreachable old primary) would use it all up and the next host would never be tried. Each host gets the URL's
connect_timeout (libpq's per-host meaning; DEFAULT_CONNECT_TIMEOUT_S without one); a host that let it run out is
tried after the others from then on, until it answers again, so that after a failover only the first connection
pays for the silent old primary (libpq has no such memory).

Each TCP connection's socket gets the URL's keepalive settings and tcp_user_timeout (url.py's defaults without
them), as libpq sets them on its own, so that the kernel ends a connection whose peer vanished without a reset
(its host lost, the network cut) within seconds rather than after hours (idle) or some 15 minutes (a statement in
flight). A server that is frozen while its host's kernel still answers for it (SIGSTOP) is noticed only by a
timeout of the client's own: ConnectionSet.abandon, called when the node's session stops answering
(coordinator/cluster/session.py), ends every connection of the node at once.
"""

from __future__ import annotations

import asyncio
import socket
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg

from storage.errors import StorageError
from storage.pg.errors import StoreUnavailableError
from storage.pg.schema import migrate
from storage.pg.url import Host, TcpOptions, parse, redact

__all__ = ["UNAVAILABLE_ERRORS", "ConnectionSet", "connect", "open_pool", "redact", "unavailable_as_store_error"]

# Connection refused/reset, timeouts, a connection lost mid-statement (SQLSTATE class 08), the server
# shutting down or not accepting connections yet (class 57), a closed connection used again; no host of the
# URL that can write (all standbys: a failover under way), or a write on a server in recovery (25006: the
# address reached a standby).
UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    asyncio.TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.TargetServerAttributeNotMatched,
    asyncpg.exceptions.ReadOnlySQLTransactionError,
)

# A host that cannot serve us now: the next one is tried (asyncpg's own list, plus our per-host timeout).
_NEXT_HOST_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    asyncio.TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.TargetServerAttributeNotMatched,
)


# Hosts whose connect_timeout ran out (or whose connection stopped answering), tried after the others until one
# answers again. Per process, as the hosts are: every connection in it learns from one that waited.
_UNANSWERED: set[Host] = set()
# The deadlines of the connects under way, per host (`_mark_unanswered` moves them to now).
_CONNECTING: dict[Host, set[asyncio.Timeout]] = {}


@contextmanager
def unavailable_as_store_error(what: str) -> Iterator[None]:
    """Re-raise a driver error that means PostgreSQL is unreachable as StoreUnavailableError."""
    try:
        yield
    except StorageError:  # ours (FencedError too), though an OSError: never re-labelled
        raise
    except UNAVAILABLE_ERRORS as exc:
        raise StoreUnavailableError(f"{what}: PostgreSQL unavailable ({type(exc).__name__}: {exc})") from exc


async def connect(url: str, **options: Any) -> asyncpg.Connection:
    """A connection to the first host of `url` that answers within its connect timeout and has the session
    attributes the URL asks for (hosts that did not answer lately last); the last host's error when none does.
    `options` go to asyncpg.connect."""
    return (await _connect(url, options))[0]


async def _connect(url: str, options: dict[str, Any]) -> tuple[asyncpg.Connection, Host | None]:
    parsed = parse(url)
    timeout = parsed.connect_timeout_s
    if len(parsed.hosts) <= 1:
        connection = await asyncpg.connect(parsed.driver_url, timeout=timeout, **options)
        return _tuned(connection, parsed.tcp), (parsed.hosts[0] if parsed.hosts else None)
    last: BaseException | None = None
    for host in sorted(parsed.hosts, key=lambda h: h in _UNANSWERED):  # (a stable sort: the URL's order)
        try:
            connection = await _connect_host(parsed.driver_url, host, timeout, options)
        except TimeoutError as exc:
            _mark_unanswered(host)
            last = exc
            continue
        except _NEXT_HOST_ERRORS as exc:
            _UNANSWERED.discard(host)  # it answered (refused, or is a standby): in the URL's order again
            last = exc
            continue
        _UNANSWERED.discard(host)
        return _tuned(connection, parsed.tcp), host
    assert last is not None
    raise last


async def _connect_host(driver_url: str, host: Host, timeout: float | None,
                        options: dict[str, Any]) -> asyncpg.Connection:
    """asyncpg.connect to one host within `timeout`, cut short (TimeoutError) as soon as the host is found not to
    answer meanwhile (`_mark_unanswered`): a connection started just before a failover was noticed would otherwise
    wait out its whole connect timeout on the silent old primary while the others have moved on."""
    async with asyncio.timeout(timeout) as deadline:
        attempts = _CONNECTING.setdefault(host, set())
        attempts.add(deadline)
        try:
            return await asyncpg.connect(driver_url, host=host.host, port=host.port, timeout=timeout, **options)
        finally:
            attempts.discard(deadline)


def _mark_unanswered(host: Host) -> None:
    """`host` did not answer: tried after the others from now on, and every connect to it under way gives up now."""
    _UNANSWERED.add(host)
    now = asyncio.get_running_loop().time()
    for deadline in list(_CONNECTING.get(host, ())):
        if not deadline.expired():  # (one marked twice before its task ran again: expiring already)
            deadline.reschedule(now)


def _tuned(connection: asyncpg.Connection, tcp: TcpOptions) -> asyncpg.Connection:
    """The connection, its TCP socket set as `tcp` says (a value of 0: left at the system's default); a Unix-domain
    socket is left alone. asyncpg has no option for them, hence its transport's socket."""
    sock = connection._transport.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return connection
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, int(tcp.keepalives))
        options = [(socket.TCP_USER_TIMEOUT, tcp.tcp_user_timeout_ms)]
        if tcp.keepalives:
            options += [(socket.TCP_KEEPIDLE, tcp.keepalives_idle_s), (socket.TCP_KEEPINTVL, tcp.keepalives_interval_s),
                        (socket.TCP_KEEPCNT, tcp.keepalives_count)]
        for option, value in options:
            if value:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)
    except BaseException:
        connection.terminate()
        raise
    return connection


class ConnectionSet:
    """Every connection one node opens to the storage URL (its pool's, its session's, its ring watcher's), so that
    all of them can be given up at once when PostgreSQL stops answering (`abandon`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._open: weakref.WeakKeyDictionary[asyncpg.Connection, Host | None] = weakref.WeakKeyDictionary()

    async def connect(self, *_url: Any, **options: Any) -> asyncpg.Connection:
        """A connection to the URL, as `connect`; also the pool's `connect` (which passes the URL again)."""
        connection, host = await _connect(self.url, options)
        self._open[connection] = host
        return connection

    def abandon(self, unanswered: asyncpg.Connection) -> None:
        """`unanswered` did not answer in time: its host is tried after the others from now on (connects to it
        under way give up at once and try the next host), and every connection is aborted -- nothing more is sent
        on any of them (no cancel request either), and the statements in flight fail at once
        (ConnectionDoesNotExistError: PostgreSQL unavailable). A pool opens new ones."""
        host = self._open.get(unanswered)
        if host is not None:
            _mark_unanswered(host)
        connections = list(self._open)
        self._open.clear()
        for connection in connections:
            connection.terminate()


async def open_pool(url: str, *, min_size: int = 1, max_size: int = 8, connections: ConnectionSet | None = None,
                    **options: Any) -> asyncpg.Pool:
    """A pool to `url` (its connections opened through `connections` when given), the schema migrated to this
    code's version (SchemaTooNewError if newer).

    Unreachable: StoreUnavailableError whose message names the redacted URL.
    """
    opener = connect if connections is None else connections.connect
    with unavailable_as_store_error(f"connect to {redact(url)}"):
        pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, connect=opener, **options)
    try:
        with unavailable_as_store_error(f"migrate {redact(url)}"):
            await migrate(pool)
    except BaseException:
        await pool.close()
        raise
    return pool
