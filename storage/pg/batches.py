"""The rows of kc_batches: one Kafka record batch (its bytes as written) per row.

Every write is fenced: it holds the partition's kc_partitions row (``FOR SHARE``, or ``FOR UPDATE``
when it moves the log start offset) in the same transaction and goes ahead only if the row's epoch is
the writer's, else raises FencedError and changes nothing. Holding the row means a concurrent epoch
bump (ownership.acquire) waits for the write, and a load that starts after the bump sees it.

``append`` is one statement (a CTE that locks the partition row, checks the epoch and inserts every
row from arrays): in autocommit it is its own transaction, so a group commit costs one round trip.
Measured against BEGIN + SELECT ... FOR SHARE + executemany(INSERT) + COMMIT by
``bench/pg_log_append.py --compare-insert``: see the report in docs/BENCHMARKS.md / the commit.

The log end offset of a partition is max(log_start, last row's last_offset + 1): deleting every row
(retention) moves log_start up to the end, so the end is never lost.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from storage.batch import HEADER_SIZE

from .errors import FencedError


class BatchRow(NamedTuple):
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


class PartitionEnds(NamedTuple):
    epoch: int
    log_start: int
    end: int  # the next offset to assign: max(log_start, last row's last_offset + 1)


_APPEND = """
WITH p AS (SELECT epoch FROM kc_partitions WHERE topic_id = $1 AND partition = $2 FOR SHARE),
ins AS (INSERT INTO kc_batches (topic_id, partition, base_offset, last_offset, max_timestamp, data)
        SELECT $1, $2, r.b, r.l, r.t, r.d
        FROM unnest($4::bigint[], $5::bigint[], $6::bigint[], $7::bytea[]) AS r(b, l, t, d)
        WHERE (SELECT epoch FROM p) = $3
        RETURNING 1)
SELECT (SELECT epoch FROM p) AS epoch, (SELECT count(*) FROM ins) AS inserted
"""

_EPOCH_FOR_SHARE = "SELECT epoch FROM kc_partitions WHERE topic_id = $1 AND partition = $2 FOR SHARE"
_EPOCH_FOR_UPDATE = "SELECT epoch FROM kc_partitions WHERE topic_id = $1 AND partition = $2 FOR UPDATE"

_INSERT = """
INSERT INTO kc_batches (topic_id, partition, base_offset, last_offset, max_timestamp, data)
SELECT $1, $2, r.b, r.l, r.t, r.d FROM unnest($3::bigint[], $4::bigint[], $5::bigint[], $6::bytea[]) AS r(b, l, t, d)
"""

# Whole rows from the one holding ``start``: at most $4 bytes unless the first row alone is larger.
# The window sum streams over the primary key index and LIMIT stops it (a row is >= HEADER_SIZE bytes).
_READ = """
SELECT base_offset, last_offset, max_timestamp, data FROM (
    SELECT base_offset, last_offset, max_timestamp, data, octet_length(data) AS size,
           sum(octet_length(data)) OVER (ORDER BY base_offset ROWS UNBOUNDED PRECEDING) AS upto
    FROM kc_batches
    WHERE topic_id = $1 AND partition = $2 AND last_offset >= $3
      AND base_offset >= coalesce((SELECT max(base_offset) FROM kc_batches
                                   WHERE topic_id = $1 AND partition = $2 AND base_offset <= $3), $3)
    ORDER BY base_offset LIMIT $5) r
WHERE upto <= $4 OR upto = size
ORDER BY base_offset
"""

_ENDS = """
SELECT p.epoch, p.log_start,
       greatest(p.log_start, coalesce((SELECT last_offset + 1 FROM kc_batches b
                                       WHERE b.topic_id = $1 AND b.partition = $2
                                       ORDER BY b.base_offset DESC LIMIT 1), 0)) AS end_offset
FROM kc_partitions p WHERE p.topic_id = $1 AND p.partition = $2
"""


def _columns(rows: list[BatchRow]) -> tuple[list[int], list[int], list[int], list[bytes]]:
    return ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows])


async def append(conn, topic_id: uuid.UUID, partition: int, epoch: int, rows: list[BatchRow]) -> None:
    """Insert ``rows`` in one fenced statement (its own transaction unless ``conn`` is in one)."""
    found = await conn.fetchrow(_APPEND, topic_id, partition, epoch, *_columns(rows))
    if found["epoch"] != epoch:
        raise FencedError(f"partition {topic_id}/{partition}: epoch {found['epoch']}, this writer's is {epoch}")


async def check_epoch(conn, topic_id: uuid.UUID, partition: int, epoch: int, *, update: bool = False) -> None:
    """Inside a transaction: lock the partition row and raise FencedError unless its epoch is ``epoch``."""
    current = await conn.fetchval(_EPOCH_FOR_UPDATE if update else _EPOCH_FOR_SHARE, topic_id, partition)
    if current != epoch:
        raise FencedError(f"partition {topic_id}/{partition}: epoch {current}, this writer's is {epoch}")


async def read_rows(conn, topic_id: uuid.UUID, partition: int, start: int, max_bytes: int) -> list[BatchRow]:
    """Rows from the one containing offset ``start`` (or the first after it), oldest first: at most
    ``max_bytes`` of batch bytes, but at least one row when there is one."""
    records = await conn.fetch(_READ, topic_id, partition, start, max_bytes, max_bytes // HEADER_SIZE + 1)
    return [BatchRow(*r) for r in records]


async def end_offset(conn, topic_id: uuid.UUID, partition: int) -> PartitionEnds | None:
    """The partition's epoch, log start offset and log end offset (None: no kc_partitions row)."""
    found = await conn.fetchrow(_ENDS, topic_id, partition)
    return None if found is None else PartitionEnds(*found)


async def delete_below(conn, topic_id: uuid.UUID, partition: int, epoch: int, offset: int) -> int:
    """Fenced: raise the log start offset to ``offset`` (never lower it) and delete the rows wholly
    below it; returns how many rows went."""
    async with conn.transaction():
        await check_epoch(conn, topic_id, partition, epoch, update=True)
        await conn.execute("UPDATE kc_partitions SET log_start = greatest(log_start, $3) "
                           "WHERE topic_id = $1 AND partition = $2", topic_id, partition, offset)
        status = await conn.execute("DELETE FROM kc_batches WHERE topic_id = $1 AND partition = $2 "
                                    "AND base_offset < $3 AND last_offset < $3", topic_id, partition, offset)
    return int(status.split()[-1])


async def set_log_start(conn, topic_id: uuid.UUID, partition: int, epoch: int, offset: int) -> int:
    """DeleteRecords made durable: the same fenced statement as ``delete_below``."""
    return await delete_below(conn, topic_id, partition, epoch, offset)


async def replace_range(conn, topic_id: uuid.UUID, partition: int, epoch: int, first: int, last: int,
                        rows: list[BatchRow]) -> None:
    """Fenced: replace the rows whose base offset lies in [first, last] by ``rows`` (compaction;
    each of ``rows`` must lie in that range)."""
    if any(r.base_offset < first or r.last_offset > last for r in rows):
        raise ValueError(f"rows outside [{first}, {last}]")
    async with conn.transaction():
        await check_epoch(conn, topic_id, partition, epoch)
        await conn.execute("DELETE FROM kc_batches WHERE topic_id = $1 AND partition = $2 "
                           "AND base_offset BETWEEN $3 AND $4", topic_id, partition, first, last)
        if rows:
            await conn.execute(_INSERT, topic_id, partition, *_columns(rows))


async def delete_topic(conn, topic_id: uuid.UUID) -> None:
    """Every row of a deleted topic (its id is never reused: a re-created topic has a new one)."""
    await conn.execute("DELETE FROM kc_batches WHERE topic_id = $1", topic_id)
