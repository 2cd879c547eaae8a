"""Connections to the storage URL (one host or several), the connection pool of cluster mode, and which driver
errors mean "PostgreSQL is unavailable".

Every connection a node or a tool opens goes through `connect`: the pool's, the node's session (LISTEN, session
lock), the ring watcher's, dump-log's and the Spark jobs'. asyncpg parses the URL, authenticates and checks
target_session_attrs; with several hosts `connect` hands it one host at a time, in the URL's order, as libpq
does, because asyncpg's own timeout covers the whole list: a first host that never answers (a frozen or
unreachable old primary) would use it all up and the next host would never be tried. Each host gets the URL's
connect_timeout (libpq's per-host meaning; DEFAULT_CONNECT_TIMEOUT_S without one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg

from storage.errors import StorageError
from storage.pg.errors import StoreUnavailableError
from storage.pg.schema import migrate
from storage.pg.url import parse, redact

__all__ = ["UNAVAILABLE_ERRORS", "connect", "open_pool", "redact", "unavailable_as_store_error"]

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
    attributes the URL asks for; the last host's error when none does. `options` go to asyncpg.connect."""
    parsed = parse(url)
    timeout = parsed.connect_timeout_s
    if len(parsed.hosts) <= 1:
        return await asyncpg.connect(parsed.driver_url, timeout=timeout, **options)
    last: BaseException | None = None
    for host in parsed.hosts:
        try:
            return await asyncpg.connect(parsed.driver_url, host=host.host, port=host.port, timeout=timeout,
                                         **options)
        except _NEXT_HOST_ERRORS as exc:
            last = exc
    assert last is not None
    raise last


async def open_pool(url: str, *, min_size: int = 1, max_size: int = 8, **options: Any) -> asyncpg.Pool:
    """A pool to `url`, the schema migrated to this code's version (SchemaTooNewError if newer).

    Unreachable: StoreUnavailableError whose message names the redacted URL.
    """
    with unavailable_as_store_error(f"connect to {redact(url)}"):
        pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, connect=connect, **options)
    try:
        with unavailable_as_store_error(f"migrate {redact(url)}"):
            await migrate(pool)
    except BaseException:
        await pool.close()
        raise
    return pool
