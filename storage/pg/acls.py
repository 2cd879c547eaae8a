"""ACLs in PostgreSQL (kc_acls): one row per binding (Kafka's AccessControlEntryRecord fields). A change inserts
and deletes in one transaction and NOTIFYs 'acls' so that every node reads them again."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import asyncpg

from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import notify

_COLUMNS = ("resource_type", "name", "pattern_type", "principal", "host", "operation", "permission")


async def read_acls(pool: asyncpg.Pool) -> list[dict[str, Any]]:
    with unavailable_as_store_error("read the ACLs"):
        rows = await pool.fetch(f"SELECT {', '.join(_COLUMNS)} FROM kc_acls")
    return [dict(row) for row in rows]


async def write_acls(pool: asyncpg.Pool, added: Iterable[dict[str, Any]], removed: Iterable[dict[str, Any]]) -> None:
    with unavailable_as_store_error("write the ACLs"):
        async with pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                "DELETE FROM kc_acls WHERE " + " AND ".join(f"{c} = ${i}" for i, c in enumerate(_COLUMNS, 1)),
                [tuple(row[c] for c in _COLUMNS) for row in removed])
            await conn.executemany(
                f"INSERT INTO kc_acls ({', '.join(_COLUMNS)}) VALUES ($1, $2, $3, $4, $5, $6, $7) "
                "ON CONFLICT DO NOTHING",
                [tuple(row[c] for c in _COLUMNS) for row in added])
            await notify(conn, "acls")
