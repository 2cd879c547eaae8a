"""Cluster-wide settings in kc_cluster ('cluster.id', 'offsets.topic.num.partitions',
'transaction.state.log.num.partitions') and
the producer-id block counter in kc_producer_ids."""

from __future__ import annotations

import asyncpg

from storage.pg.connect import unavailable_as_store_error

CLUSTER_ID = "cluster.id"
OFFSETS_PARTITIONS = "offsets.topic.num.partitions"
TXN_PARTITIONS = "transaction.state.log.num.partitions"


async def put_once(pool: asyncpg.Pool, name: str, value: str) -> str:
    """The stored value of `name`, storing `value` first if there is none: the first node to
    start a cluster decides, every later one reads its value."""
    with unavailable_as_store_error(f"settle the cluster's {name}"):
        await pool.execute("INSERT INTO kc_cluster (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                           name, value)
        # a second statement: it sees the row of a node whose insert won the race meanwhile
        return await pool.fetchval("SELECT value FROM kc_cluster WHERE name = $1", name)


async def reserve_producer_ids(pool: asyncpg.Pool, size: int) -> int:
    """Reserve `size` producer ids for the caller alone: returns the first. Atomic across nodes
    (the row is locked by the update); the first block of a cluster starts at 0."""
    with unavailable_as_store_error("reserve producer ids"):
        return await pool.fetchval(
            "INSERT INTO kc_producer_ids AS p (id, next_block) VALUES (1, $1) "
            "ON CONFLICT (id) DO UPDATE SET next_block = p.next_block + $1 RETURNING next_block - $1", size)
