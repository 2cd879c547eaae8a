"""__consumer_offsets rows in a test PostgreSQL store, as a cluster-mode node leaves them (for the tools' tests)."""

from __future__ import annotations

import asyncio
import uuid

from storage.batch import iter_batches
from storage.pg import batches, ownership
from storage.pg.connect import open_pool
from storage.pg.staged_compaction import rows_of

CLUSTER_ID = "tools-test-cluster"


def offsets_topic_id(cluster_id: str = CLUSTER_ID) -> uuid.UUID:
    return uuid.uuid5(uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-cluster:{cluster_id}"), "__consumer_offsets")


def seed(url: str, logs: dict[int, bytes], partitions: int = 50, epoch: int = 1) -> uuid.UUID:
    """Store each partition's log bytes (whole batches) as rows, one per batch; partition rows owned by
    node 1 at ``epoch``; returns the offsets topic id (kc_cluster's cluster.id is set, kc_topics is not)."""
    topic_id = offsets_topic_id()

    async def run() -> None:
        pool = await open_pool(url)
        try:
            await pool.execute("INSERT INTO kc_cluster (name, value) VALUES ('cluster.id', $1)", CLUSTER_ID)
            await ownership.ensure_partitions(pool, topic_id, partitions)
            await pool.execute("UPDATE kc_partitions SET owner = 1, epoch = $2 WHERE topic_id = $1", topic_id, epoch)
            async with pool.acquire() as conn:
                for partition, data in logs.items():
                    assert sum(b.size for b in iter_batches(data)) == len(data), "whole batches only"
                    await batches.append(conn, topic_id, partition, epoch, rows_of(data))
        finally:
            await pool.close()

    asyncio.run(run())
    return topic_id
