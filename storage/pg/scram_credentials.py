"""SCRAM credentials in PostgreSQL (kc_scram_credentials): one row per (user, mechanism type) with the salt,
StoredKey, ServerKey and iterations (never a password). A change upserts and deletes in one transaction and
NOTIFYs 'scram_credentials' so that every node reads them again."""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg

from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import notify

Row = tuple[str, int, bytes, bytes, bytes, int]  # user, mechanism, salt, stored_key, server_key, iterations


async def read_credentials(pool: asyncpg.Pool) -> list[Row]:
    with unavailable_as_store_error("read the SCRAM credentials"):
        rows = await pool.fetch("SELECT user_name, mechanism, salt, stored_key, server_key, iterations "
                                "FROM kc_scram_credentials ORDER BY user_name, mechanism")
    return [(r["user_name"], r["mechanism"], bytes(r["salt"]), bytes(r["stored_key"]), bytes(r["server_key"]),
             r["iterations"]) for r in rows]


async def write_credentials(pool: asyncpg.Pool, upserts: Iterable[Row], deletes: Iterable[tuple[str, int]]) -> None:
    with unavailable_as_store_error("write the SCRAM credentials"):
        async with pool.acquire() as conn, conn.transaction():
            await conn.executemany("DELETE FROM kc_scram_credentials WHERE user_name = $1 AND mechanism = $2",
                                   list(deletes))
            await conn.executemany(
                """INSERT INTO kc_scram_credentials (user_name, mechanism, salt, stored_key, server_key, iterations)
                   VALUES ($1, $2, $3, $4, $5, $6)
                   ON CONFLICT (user_name, mechanism) DO UPDATE SET salt = EXCLUDED.salt,
                       stored_key = EXCLUDED.stored_key, server_key = EXCLUDED.server_key,
                       iterations = EXCLUDED.iterations""", list(upserts))
            await notify(conn, "scram_credentials")
