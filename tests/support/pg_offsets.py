"""__consumer_offsets rows in a test PostgreSQL store, as a cluster-mode node leaves them (for the tools' tests)."""

from __future__ import annotations

import asyncio
import uuid

from storage.batch import decode_records, iter_batches
from storage.pg import batches, ownership
from storage.pg.batches import rows_of
from storage.pg.connect import open_pool

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


async def stage_compaction(conn, topic_id: uuid.UUID, partition: int, upper: int, tombstones: list[dict],
                           settings: dict, name: str = "job-1") -> dict:
    """What the expire job stages for the rows below ``upper`` (their latest record per key kept) plus
    ``tombstones``: a kc_blobs 'staging' row; returns its header."""
    from storage.cleaner import clean_segment
    from storage.pg import blobs, log_reads, staged_compaction

    data = await log_reads.range_bytes(conn, topic_id, partition, 0, upper - 1)
    rows = [(b.base_offset, b.last_offset, b.raw()) for b in iter_batches(data)]
    latest = {r.key: r.offset for b in iter_batches(data) for r in decode_records(b)}
    cleaned = clean_segment(data, set(latest.values()).__contains__, now_ms=settings["now_ms"],
                            delete_retention_ms=86_400_000, upper_bound=upper)
    header = {"id": name, "partition": partition, "settings": settings, "first": 0, "last": rows[-1][1],
              "replaced": staged_compaction.replaced_rows(log_reads.crcs_of(rows)),
              "tombstones": {"count": len(tombstones), "records": tombstones}}
    await blobs.put(conn, blobs.STAGING, topic_id, partition, name, staged_compaction.encode(header, cleaned.data))
    return header
