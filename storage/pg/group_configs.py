"""Group configs in PostgreSQL (kc_group_configs): one row per (group, name), the consumer.* and share.* configs
IncrementalAlterConfigs set on a GROUP resource. A write replaces one group's whole set and NOTIFYs
'group_configs' so that every node reads them again (the group's coordinator may be any node)."""

from __future__ import annotations

from collections.abc import Mapping

import asyncpg

from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import notify


async def read_all(pool: asyncpg.Pool) -> dict[str, dict[str, str]]:
    with unavailable_as_store_error("read the group configs"):
        rows = await pool.fetch("SELECT group_id, name, value FROM kc_group_configs ORDER BY group_id, name")
    out: dict[str, dict[str, str]] = {}
    for row in rows:
        out.setdefault(row["group_id"], {})[row["name"]] = row["value"]
    return out


async def write_group(pool: asyncpg.Pool, group_id: str, configs: Mapping[str, str]) -> None:
    """The group's configs become `configs` (none: the group has no configs any more)."""
    with unavailable_as_store_error("write the group configs"):
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM kc_group_configs WHERE group_id = $1", group_id)
            await conn.executemany("INSERT INTO kc_group_configs (group_id, name, value) VALUES ($1, $2, $3)",
                                   [(group_id, name, value) for name, value in sorted(configs.items())])
            await notify(conn, "group_configs")
