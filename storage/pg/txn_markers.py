"""kc_txn_markers: transaction markers queued for the node that holds their partition (cluster mode).

A transaction coordinator whose transaction touched a partition held by another node does not connect to
that node (Kafka's WriteTxnMarkers): it queues the marker here (`enqueue`), which NOTIFYs channel
`kc_txn_markers` with 'q:<topic id>:<partition>'. The holder reads the partition's rows in id order
(`queued`), writes each marker into its log and deletes the rows whose markers are durable (`delete`),
which NOTIFYs 'd:<id>,<id>...': the coordinator's wait for those ids ends. A row outlives a holder that
died before deleting it, so the next holder writes that marker again (a repeated marker is harmless, as a
marker Kafka's coordinator resends after a failover is). Deleting a topic deletes its rows (catalog.py):
Kafka drops the markers of a deleted partition.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import Executor

CHANNEL = "kc_txn_markers"
QUEUED, DONE = "q", "d"

# The partition row is read FOR SHARE: a topic deletion (which deletes the partition rows first, then the
# markers) either waits for this insert and then deletes its row too, or has deleted the partition row
# already and nothing is inserted.
_ENQUEUE = f"""
WITH queued AS (
    INSERT INTO kc_txn_markers (topic_id, partition, producer_id, producer_epoch, commit, coordinator_epoch)
    SELECT p.topic_id, p.partition, $3, $4, $5, $6 FROM kc_partitions p
    WHERE p.topic_id = $1 AND p.partition = $2 FOR SHARE
    RETURNING id)
SELECT id, pg_notify('{CHANNEL}', '{QUEUED}:' || $1::text || ':' || $2::text) FROM queued"""

_DELETE = f"""
WITH gone AS (DELETE FROM kc_txn_markers WHERE id = ANY($1::bigint[]) RETURNING id)
SELECT pg_notify('{CHANNEL}', '{DONE}:' || string_agg(id::text, ',')) FROM gone HAVING count(*) > 0"""

_DELETE_ORPHANS = f"""
WITH gone AS (DELETE FROM kc_txn_markers m
              WHERE NOT EXISTS (SELECT 1 FROM kc_partitions p
                                WHERE p.topic_id = m.topic_id AND p.partition = m.partition)
              RETURNING id)
SELECT pg_notify('{CHANNEL}', '{DONE}:' || string_agg(id::text, ',')), count(*) FROM gone HAVING count(*) > 0"""

MAX_DELETE = 500  # ids per delete: the done notification's payload stays far below PostgreSQL's 8000 bytes


class QueuedMarker(NamedTuple):
    id: int
    topic_id: uuid.UUID
    partition: int
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


async def enqueue(executor: Executor, topic_id: uuid.UUID, partition: int, producer_id: int,
                  producer_epoch: int, commit: bool, coordinator_epoch: int) -> int | None:
    """Queue a marker for the partition's holder; its row id, or None when the partition does not exist
    (its topic was deleted). StoreUnavailableError when PostgreSQL is."""
    with unavailable_as_store_error("queue a transaction marker"):
        row = await executor.fetchrow(_ENQUEUE, topic_id, partition, producer_id, producer_epoch, commit,
                                      coordinator_epoch)
    return None if row is None else row["id"]


async def queued(executor: Executor, topic_id: uuid.UUID, partition: int, limit: int = 100) -> list[QueuedMarker]:
    """The partition's queued markers, oldest first."""
    with unavailable_as_store_error("read the queued transaction markers"):
        rows = await executor.fetch(
            """SELECT id, topic_id, partition, producer_id, producer_epoch, commit, coordinator_epoch
               FROM kc_txn_markers WHERE topic_id = $1 AND partition = $2 ORDER BY id LIMIT $3""",
            topic_id, partition, limit)
    return [QueuedMarker(*row) for row in rows]


async def delete(executor: Executor, ids: Sequence[int]) -> None:
    """Delete the rows of markers now written (or dropped), NOTIFYing their ids to the waiting coordinators."""
    with unavailable_as_store_error("delete written transaction markers"):
        for start in range(0, len(ids), MAX_DELETE):
            await executor.execute(_DELETE, list(ids[start:start + MAX_DELETE]))


async def still_queued(executor: Executor, ids: Iterable[int]) -> set[int]:
    """Which of `ids` are still queued (a waiter's safety net for a missed notification)."""
    with unavailable_as_store_error("read the queued transaction markers"):
        rows = await executor.fetch("SELECT id FROM kc_txn_markers WHERE id = ANY($1::bigint[])", list(ids))
    return {row["id"] for row in rows}


async def queued_partitions(executor: Executor) -> list[tuple[uuid.UUID, int]]:
    """Every partition with a queued marker."""
    with unavailable_as_store_error("read the queued transaction markers"):
        rows = await executor.fetch("SELECT DISTINCT topic_id, partition FROM kc_txn_markers")
    return [(row["topic_id"], row["partition"]) for row in rows]


async def delete_orphans(executor: Executor) -> int:
    """Delete the markers of partitions that no longer exist (a safety net: topic deletion deletes them)."""
    with unavailable_as_store_error("delete orphaned transaction markers"):
        row = await executor.fetchrow(_DELETE_ORPHANS)
    return 0 if row is None else row["count"]


class Notification(NamedTuple):
    """A notification of CHANNEL: a marker queued for a partition (`kind` QUEUED), or markers written (DONE)."""

    kind: str
    topic_id: uuid.UUID | None = None
    partition: int = -1
    ids: tuple[int, ...] = ()


def parse(payload: str) -> Notification | None:
    """The notification in `payload`, or None if malformed."""
    kind, _, rest = payload.partition(":")
    try:
        if kind == QUEUED:
            topic_id, _, partition = rest.rpartition(":")
            return Notification(QUEUED, uuid.UUID(topic_id), int(partition))
        if kind == DONE:
            return Notification(DONE, ids=tuple(int(i) for i in rest.split(",") if i))
    except ValueError:
        return None
    return None
