"""Dynamic broker configs in PostgreSQL (kc_broker_configs): one row per (level, name), level ''
being the cluster-wide defaults and a node id (as text) that node's own. A write replaces one
level's whole set and NOTIFYs 'broker_configs' so that every node reads them again."""

from __future__ import annotations

from collections.abc import Mapping

import asyncpg

from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import notify


async def read_levels(pool: asyncpg.Pool) -> dict[str, dict[str, str]]:
    with unavailable_as_store_error("read the dynamic broker configs"):
        rows = await pool.fetch("SELECT level, name, value FROM kc_broker_configs ORDER BY level, name")
    out: dict[str, dict[str, str]] = {}
    for row in rows:
        out.setdefault(row["level"], {})[row["name"]] = row["value"]
    return out


async def write_level(pool: asyncpg.Pool, level: str, configs: Mapping[str, str]) -> None:
    with unavailable_as_store_error("write the dynamic broker configs"):
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM kc_broker_configs WHERE level = $1", level)
            await conn.executemany("INSERT INTO kc_broker_configs (level, name, value) VALUES ($1, $2, $3)",
                                   [(level, name, value) for name, value in sorted(configs.items())])
            await notify(conn, "broker_configs")
