"""kc_partitions: one row per partition of every log, with its owner (a node id) and epoch.

The epoch grows with every change of owner and fences writes: every write to a partition's rows is
conditional on the writer's epoch (storage/pg/batches.py). Which node *should* own a partition is
policy (coordinator/cluster/assignment.py); this module only moves ownership safely.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass

from storage.pg.notify import CHANNEL, Executor, notify


@dataclass(frozen=True, slots=True)
class PartitionRow:
    topic_id: uuid.UUID
    partition: int
    owner: int | None
    epoch: int
    log_start: int


async def ensure_partitions(executor: Executor, topic_id: uuid.UUID, count: int) -> int:
    """Rows for partitions 0..count-1 of the topic (existing rows untouched); returns how many were new.
    Takes a connection too, to run inside the caller's transaction (topic creation)."""
    created = await executor.fetchval(
        """WITH created AS (
               INSERT INTO kc_partitions (topic_id, partition) SELECT $1, generate_series(0, $2 - 1)
               ON CONFLICT DO NOTHING RETURNING 1)
           SELECT count(*) FROM created""",
        topic_id, count,
    )  # fmt: skip
    if created:
        await notify(executor, "partitions")
    return created


async def partitions(executor: Executor, topic_id: uuid.UUID | None = None) -> list[PartitionRow]:
    """Every partition row (or one topic's), ordered by topic id and partition."""
    rows = await executor.fetch(
        """SELECT topic_id, partition, owner, epoch, log_start FROM kc_partitions
           WHERE $1::uuid IS NULL OR topic_id = $1 ORDER BY topic_id, partition""",
        topic_id,
    )
    return [PartitionRow(*row) for row in rows]


async def acquire(
    executor: Executor, topic_id: uuid.UUID, partition: int, node_id: int, live_node_ids: Collection[int]
) -> int | None:
    """Make `node_id` the owner with epoch + 1; returns the new epoch, or None when refused (`acquire_many`)."""
    return (await acquire_many(executor, [(topic_id, partition)], node_id, live_node_ids)).get((topic_id, partition))


async def acquire_many(
    executor: Executor, keys: Collection[tuple[uuid.UUID, int]], node_id: int, live_node_ids: Collection[int]
) -> dict[tuple[uuid.UUID, int], int]:
    """Make `node_id` the owner of each (topic id, partition) in `keys` with epoch + 1, in one statement (one
    commit, one notification: a node taking over a dead one's partitions pays for one, not one each); returns the
    new epoch of each partition taken. One is refused (left out) unless our own lease is live and its current
    owner is NULL, ourselves (re-taking after a lost lease or a restart: the new epoch fences the previous
    incarnation) or dead -- dead both by PostgreSQL's clock and in `live_node_ids`, the caller's view. The rows
    are locked in (topic id, partition) order first, so two nodes taking overlapping sets cannot deadlock; one
    racing for a row waits for the winner and re-checks the winner's row (and loses it).
    """
    if not keys:
        return {}
    topic_ids, partitions_ = zip(*keys, strict=True)
    rows = await executor.fetch(
        f"""WITH wanted AS (
                SELECT p.topic_id, p.partition FROM kc_partitions p
                JOIN unnest($1::uuid[], $2::int[]) AS k(topic_id, partition) USING (topic_id, partition)
                ORDER BY p.topic_id, p.partition FOR UPDATE OF p),
            taken AS (
                UPDATE kc_partitions AS p SET owner = $3, epoch = p.epoch + 1
                FROM wanted w
                WHERE p.topic_id = w.topic_id AND p.partition = w.partition
                  AND EXISTS (SELECT 1 FROM kc_nodes WHERE node_id = $3 AND expires_at > clock_timestamp())
                  AND (p.owner IS NULL OR p.owner = $3
                       OR (NOT p.owner = ANY($4::int[])
                           AND NOT EXISTS (SELECT 1 FROM kc_nodes n
                                           WHERE n.node_id = p.owner AND n.expires_at > clock_timestamp())))
                RETURNING p.topic_id, p.partition, p.epoch)
            SELECT topic_id, partition, epoch, pg_notify('{CHANNEL}', 'partitions') FROM taken""",
        list(topic_ids), list(partitions_), node_id, list(live_node_ids),
    )  # fmt: skip
    return {(row["topic_id"], row["partition"]): row["epoch"] for row in rows}


async def release(executor: Executor, topic_id: uuid.UUID, partition: int, node_id: int, epoch: int) -> bool:
    """owner = NULL (epoch unchanged), only while the partition is still ours at `epoch`."""
    released = await executor.fetch(
        f"""WITH released AS (
                UPDATE kc_partitions SET owner = NULL
                WHERE topic_id = $1 AND partition = $2 AND owner = $3 AND epoch = $4 RETURNING 1)
            SELECT pg_notify('{CHANNEL}', 'partitions') FROM released""",
        topic_id, partition, node_id, epoch,
    )  # fmt: skip
    return bool(released)
