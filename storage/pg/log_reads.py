"""Reading a topic's kc_batches rows from outside the partition's owner: dump-log and the Spark jobs.

These reads take no lock and need no epoch: they see the rows committed when each statement runs.
A range read returns the rows' bytes concatenated in offset order, which is exactly what a
segment file holding those batches contains, so the tools parse both with the same code.
``sync`` runs one of the coroutines here on its own connection, for scripts and Spark executors.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple, TypeVar

import asyncpg

from rules import placement
from rules.placement import OFFSETS_TOPIC

from .connect import connect, redact, unavailable_as_store_error

T = TypeVar("T")
CRC_AT = 17  # Kafka batch header: baseOffset(8) batchLength(4) partitionLeaderEpoch(4) magic(1) crc(4)


class RowInfo(NamedTuple):
    base_offset: int
    last_offset: int
    size: int


class Chunk(NamedTuple):
    """Consecutive rows of one partition read as one piece (a "segment" to the tools)."""

    first: int  # base offset of its first row
    last: int  # last offset of its last row
    size: int  # bytes


class RowCrc(NamedTuple):
    base_offset: int
    last_offset: int
    crc: bytes  # the batch header's CRC-32C field, as stored


def sync(url: str, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    """Run ``work(conn)`` on a fresh connection to ``url`` (no running event loop needed)."""

    async def run() -> T:
        with unavailable_as_store_error(f"connect to {redact(url)}"):
            conn = await connect(url)
        try:
            return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(run())


async def offsets_topic_id(conn) -> uuid.UUID:
    """__consumer_offsets's topic id: its kc_topics row, else derived from kc_cluster's cluster.id as
    the topic catalog derives it (coordinator/data_plane/topic_catalog.py)."""
    found = await conn.fetchval("SELECT topic_id FROM kc_topics WHERE name = $1", OFFSETS_TOPIC)
    if found is not None:
        return found
    cluster_id = await conn.fetchval("SELECT value FROM kc_cluster WHERE name = 'cluster.id'")
    if cluster_id is None:
        raise LookupError("no cluster.id in kc_cluster: no node of this cluster has started yet")
    return placement.offsets_topic_id(cluster_id)


async def partitions(conn, topic_id: uuid.UUID) -> list[int]:
    rows = await conn.fetch("SELECT partition FROM kc_partitions WHERE topic_id = $1 ORDER BY partition", topic_id)
    return [r[0] for r in rows]


async def row_index(conn, topic_id: uuid.UUID, partition: int) -> list[RowInfo]:
    """Offsets and sizes (not the bytes) of the partition's rows from its log start offset on."""
    rows = await conn.fetch(
        "SELECT b.base_offset, b.last_offset, octet_length(b.data) FROM kc_batches b "
        "JOIN kc_partitions p ON p.topic_id = b.topic_id AND p.partition = b.partition "
        "WHERE b.topic_id = $1 AND b.partition = $2 AND b.last_offset >= p.log_start ORDER BY b.base_offset",
        topic_id, partition)
    return [RowInfo(*r) for r in rows]


async def range_bytes(conn, topic_id: uuid.UUID, partition: int, first: int, last: int) -> bytes:
    """The bytes of the rows whose base offset lies in [first, last], in offset order."""
    rows = await conn.fetch("SELECT data FROM kc_batches WHERE topic_id = $1 AND partition = $2 "
                            "AND base_offset BETWEEN $3 AND $4 ORDER BY base_offset", topic_id, partition, first, last)
    return b"".join(r[0] for r in rows)


async def range_crcs(conn, topic_id: uuid.UUID, partition: int, first: int, last: int) -> list[RowCrc]:
    """Base/last offset and batch CRC of each row whose base offset lies in [first, last]."""
    rows = await conn.fetch(
        f"SELECT base_offset, last_offset, substring(data from {CRC_AT + 1} for 4) FROM kc_batches "
        "WHERE topic_id = $1 AND partition = $2 AND base_offset BETWEEN $3 AND $4 ORDER BY base_offset",
        topic_id, partition, first, last)
    return [RowCrc(*r) for r in rows]


def crcs_of(rows_data: Sequence[tuple[int, int, bytes | memoryview]]) -> list[RowCrc]:
    """``range_crcs``'s answer computed from (base, last, batch bytes) of rows already read."""
    return [RowCrc(base, last, bytes(data[CRC_AT:CRC_AT + 4])) for base, last, data in rows_data]


def chunks(index: list[RowInfo], chunk_bytes: int) -> list[Chunk]:
    """Cut a partition's rows into runs of about ``chunk_bytes`` (at least one row each)."""
    out: list[Chunk] = []
    first, size = None, 0
    for i, row in enumerate(index):
        if first is None:
            first, size = row.base_offset, 0
        size += row.size
        if size >= chunk_bytes or i == len(index) - 1:
            out.append(Chunk(first, row.last_offset, size))
            first = None
    return out
