"""Cluster mode's input: __consumer_offsets rows in PostgreSQL (``--storage-url``) as the jobs' "segments".

The driver lists each partition's rows (offsets and sizes only, a few dozen bytes a row: small even for
a large log) and cuts them into chunks of about ``chunk_bytes`` (consecutive rows). A chunk stands
where a segment file stands in local mode -- its source in a spec is a ``PgChunk`` instead of a path --
and an executor fetches its bytes itself (one query on its own connection): the batch bytes never
pass through the driver, as segment bytes never do. The rows' bytes concatenated in offset order are
a segment file's content, so everything after the read is the segment path's code. A partition's last
chunk plays the active segment (compaction leaves it alone; expiry reads it).
"""

from __future__ import annotations

import os
import uuid
from typing import NamedTuple

from .common import JobError, PartitionInput, find_partition_dirs, segment_paths

DEFAULT_CHUNK_BYTES = 64 << 20


class PgChunk(NamedTuple):
    """Rows of one partition whose base offsets lie in [first, last]; ``size`` bytes when listed."""

    url: str
    topic_id: str
    partition: int
    first: int
    last: int
    size: int


def label(partition: int) -> str:
    """The PartitionInput.path of a partition read from the store (in messages and summaries)."""
    return f"postgresql:__consumer_offsets-{partition}"


def list_store(url: str, chunk_bytes: int) -> tuple[uuid.UUID, list[PartitionInput], dict[str, list[tuple]]]:
    """(offsets topic id, partitions with rows, label -> [(base, PgChunk, size)] in offset order):
    what find_partition_dirs + segment_paths give for log directories."""
    from storage.pg import log_reads

    async def work(conn):
        topic_id = await log_reads.offsets_topic_id(conn)
        found = {}
        for partition in await log_reads.partitions(conn, topic_id):
            index = await log_reads.row_index(conn, topic_id, partition)
            if index:
                found[partition] = [(c.first, PgChunk(url, str(topic_id), partition, c.first, c.last, c.size), c.size)
                                    for c in log_reads.chunks(index, chunk_bytes)]
        return topic_id, found

    topic_id, found = log_reads.sync(url, work)
    parts = [PartitionInput(label(p), p) for p in sorted(found)]
    return topic_id, parts, {label(p): chunks for p, chunks in found.items()}


def read_source(source) -> bytes:
    """A spec's bytes: a segment file's, or a chunk's rows fetched from PostgreSQL."""
    if isinstance(source, str):
        with open(source, "rb") as f:
            return f.read()
    from storage.pg import log_reads

    topic_id = uuid.UUID(source.topic_id)
    return log_reads.sync(source.url, lambda conn: log_reads.range_bytes(
        conn, topic_id, source.partition, source.first, source.last))


def source_size(source) -> int:
    return os.path.getsize(source) if isinstance(source, str) else source.size


def source_name(source) -> str:
    """How messages name a source: the file's path, or the partition and offsets of a chunk."""
    if isinstance(source, str):
        return source
    return f"{label(source.partition)} rows {source.first}..{source.last}"


def find_inputs(log_dirs: list[str], storage_url: str | None, chunk_bytes: int
                ) -> tuple[list[PartitionInput], dict[str, list[tuple]]]:
    """The partitions to read and, by PartitionInput.path, their (base, source, size) "segments":
    from log directories, and/or from the PostgreSQL store."""
    parts = find_partition_dirs(log_dirs) if log_dirs else []
    segs = {p.path: segment_paths(p.path) for p in parts}
    if storage_url:
        _, store_parts, store_segs = list_store(storage_url, chunk_bytes)
        taken = {p.partition for p in parts}
        if taken & {p.partition for p in store_parts}:
            raise JobError(f"partitions {sorted(taken & {p.partition for p in store_parts})} given twice "
                           "(log directories and --storage-url)")
        parts = sorted(parts + store_parts, key=lambda p: p.partition)
        segs.update(store_segs)
    return parts, segs
