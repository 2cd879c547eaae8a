"""dump-log on the PostgreSQL store: __consumer_offsets's rows decoded one line per record (and per control
batch), as storage/dump.py does for segment files (same parser, same lines)."""

from __future__ import annotations

from storage.dump import iter_batch_entries, write_records

from . import log_reads
from .connect import redact

CHUNK_BYTES = 16 << 20  # rows read per query: bounds the memory of a dump of any size


def dump_store(url: str, partitions: list[int] | None, as_json: bool, out) -> int:
    """Write one line per record of the given offsets partitions (all when None), partition by
    partition in offset order; returns the number of records."""

    async def work(conn) -> int:
        topic_id = await log_reads.offsets_topic_id(conn)
        wanted = partitions if partitions is not None else await log_reads.partitions(conn, topic_id)
        count = 0
        for partition in wanted:
            for chunk in log_reads.chunks(await log_reads.row_index(conn, topic_id, partition), CHUNK_BYTES):
                data = await log_reads.range_bytes(conn, topic_id, partition, chunk.first, chunk.last)
                label = f"{redact(url)} __consumer_offsets-{partition} rows {chunk.first}..{chunk.last}"
                count += write_records(iter_batch_entries(label, data), as_json, out)
        return count

    return log_reads.sync(url, work)
