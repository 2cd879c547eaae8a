"""The expire job's cluster-mode ends: clean a chunk of PostgreSQL rows (a task), and stage each
partition's result as one kc_blobs row (kind 'staging', storage/pg/staged_compaction.py) for the
partition's owner to apply -- the counterpart of the ``.staging-<id>`` directories of local mode.

The cleaned bytes come back to the driver: they are at most the closed chunks' size and usually far
less (compaction keeps one record per key), and a partition's staging is one row anyway.
"""

from __future__ import annotations

import time
import uuid

from .common import JobError
from .store_input import label, read_source, source_name


def clean_chunk(row, source, now_ms: int, retention_ms: int, after: dict | None = None) -> dict:
    """Task: compact one closed chunk of rows (the bytes fetched again, checked against the scan); `after`:
    how the transactions the chunk leaves open end (spark_jobs/txn_rows.per_segment)."""
    from storage.batch import iter_batches
    from storage.cleaner import clean_segment
    from storage.errors import RecordError
    from storage.pg.log_reads import crcs_of
    from storage.pg.staged_compaction import replaced_rows
    from storage.txn_clean import SegmentTxns

    data = read_source(source)
    if len(data) != row.scanned_bytes:
        raise JobError(f"{source_name(source)} changed while the job read it (the owner compacted or "
                       "deleted rows): run the job again")
    try:
        cleaned = clean_segment(data, set(row.keep or ()).__contains__, now_ms=now_ms,
                                delete_retention_ms=retention_ms, upper_bound=row.upper_bound,
                                aborted=SegmentTxns(data).aborted_fn(after or {}))
        rows = [(b.base_offset, b.last_offset, b.raw()) for b in iter_batches(data)]
    except RecordError as exc:
        raise JobError(f"{source_name(source)}: {exc}") from None
    return {"partition": row.src_partition, "base_offset": row.segment_base, "first": source.first,
            "last": source.last, "replaced": replaced_rows(crcs_of(rows)), "data": cleaned.data,
            "cleaned": {"size": len(cleaned.data), "empty": not cleaned.data, "last_offset": cleaned.last_offset},
            "stats": vars(cleaned.stats)}


def write_store_staging(url: str, staging_id: str, now_ms: int, settings: dict, segs: dict, partitions: list[int],
                        cleaned: list[dict], tombstones: list[dict], info: dict) -> list[str]:
    """One staging blob per partition with cleaned chunks or tombstones, all in one transaction
    (a failed job stages nothing); returns what was staged."""
    from storage.pg import blobs, log_reads, staged_compaction

    staged: list[tuple[uuid.UUID, int, bytes]] = []
    for p in partitions:
        mine = sorted((c for c in cleaned if c["partition"] == p), key=lambda c: c["base_offset"])
        tombs = [{k: v for k, v in t.items() if k != "offsets_partition"}
                 for t in tombstones if t["offsets_partition"] == p]
        if not mine and not tombs:
            continue
        last_base, last_source, _ = segs[p][-1]
        header = {
            "id": staging_id, "partition": p, "created_at_ms": int(time.time() * 1000), "settings": settings,
            "first": mine[0]["first"] if mine else 0, "last": mine[-1]["last"] if mine else -1,
            "replaced": [r for c in mine for r in c["replaced"]],
            "covered_log_end_offset": info[(p, last_base)].offset,
            "segments": [{k: c[k] for k in ("base_offset", "first", "last", "cleaned")} for c in mine],
            "tombstones": {"count": len(tombs), "records": tombs},
        }
        data = b"".join(c["data"] for c in mine)
        staged.append((uuid.UUID(last_source.topic_id), p, staged_compaction.encode(header, data)))

    async def put_all(conn) -> None:
        async with conn.transaction():
            for topic_id, p, blob in staged:
                await blobs.put(conn, blobs.STAGING, topic_id, p, staging_id, blob)

    log_reads.sync(url, put_all)
    return [f"{label(p)} {staging_id} ({len(blob)} bytes)" for _, p, blob in staged]
