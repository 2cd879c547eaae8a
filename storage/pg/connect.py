"""Open the connection pool of cluster mode, and say which driver errors mean "PostgreSQL is unavailable"."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg

from storage.errors import StorageError
from storage.pg.errors import StoreUnavailableError
from storage.pg.schema import migrate
from storage.pg.url import redact

__all__ = ["UNAVAILABLE_ERRORS", "open_pool", "redact", "unavailable_as_store_error"]

# Connection refused/reset, timeouts, a connection lost mid-statement (SQLSTATE class 08), the server
# shutting down or not accepting connections yet (class 57), a closed connection used again.
UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    asyncio.TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
    asyncpg.InterfaceError,
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


async def open_pool(url: str, *, min_size: int = 1, max_size: int = 8, **options: Any) -> asyncpg.Pool:
    """A pool to `url`, the schema migrated to this code's version (SchemaTooNewError if newer).

    Unreachable: StoreUnavailableError whose message names the redacted URL.
    """
    with unavailable_as_store_error(f"connect to {redact(url)}"):
        pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, **options)
    try:
        with unavailable_as_store_error(f"migrate {redact(url)}"):
            await migrate(pool)
    except BaseException:
        await pool.close()
        raise
    return pool
