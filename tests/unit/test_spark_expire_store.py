"""spark_jobs.expire --storage-url: reads __consumer_offsets rows from PostgreSQL, stages a blob per
partition, and the blob applied (fenced) keeps the state while KIP-211 decides as on segment files."""

from __future__ import annotations

import asyncio
import os

import pytest

from spark_jobs.common import spark_session
from spark_jobs.expire import run
from storage.pg import blobs, log_reads, staged_compaction
from storage.pg.connect import open_pool
from storage.pg.errors import FencedError
from tests.support.pg_offsets import seed
from tests.support.spark import offsets_dir, replay
from tests.unit.test_spark_expire import DELETE_RETENTION, EXPECTED, NOW, RETENTION_MIN, build_log, tomb_key

EPOCH = 3
CHUNK = 700  # bytes of rows per chunk: several closed chunks and an active one


@pytest.fixture(scope="module")
def staged_in_store(tmp_path_factory, postgres_server):
    root = str(tmp_path_factory.mktemp("logdirs"))
    path = offsets_dir(root, 0)
    build_log(path)
    data = b"".join(open(os.path.join(path, n), "rb").read() for n in sorted(os.listdir(path)) if n.endswith(".log"))
    url = postgres_server.new_database()
    topic_id = seed(url, {0: data}, epoch=EPOCH)
    spark = spark_session("local[2]", "test-expire-store", 2, {"spark.ui.enabled": "false",
                                                                 "spark.default.parallelism": "2"})
    try:
        summary = run(["--storage-url", url, "--chunk-bytes", str(CHUNK), "--offsets-retention-minutes",
                       str(RETENTION_MIN), "--delete-retention-ms", str(DELETE_RETENTION), "--now-ms", str(NOW)],
                      spark=spark)
    finally:
        spark.stop()
    return url, topic_id, path, data, summary


def store_state(url, topic_id, tmp_path):
    """replay() of the partition's rows, written out as one segment file."""
    dest = tmp_path / "rows" / "00000000000000000000.log"
    dest.parent.mkdir(exist_ok=True)
    dest.write_bytes(log_reads.sync(url, lambda conn: log_reads.range_bytes(conn, topic_id, 0, 0, 1 << 62)))
    return replay(str(dest))


async def staging_blob(url, topic_id):
    pool = await open_pool(url)
    try:
        async with pool.acquire() as conn:
            [info] = await blobs.names(conn, blobs.STAGING, topic_id, 0)
            return info.name, *staged_compaction.decode(await blobs.get(conn, blobs.STAGING, topic_id, 0, info.name))
    finally:
        await pool.close()


async def apply(url, topic_id, epoch, name, header, cleaned):
    pool = await open_pool(url)
    try:
        async with pool.acquire() as conn:
            problems = await staged_compaction.apply(conn, topic_id, 0, epoch, name, header, cleaned)
            return problems, await blobs.names(conn, blobs.STAGING, topic_id, 0)
    finally:
        await pool.close()


def test_staged_blob_decides_as_on_segments_and_keeps_state(staged_in_store, tmp_path):
    url, topic_id, path, data, summary = staged_in_store
    assert summary["segments"] > 3 and summary["segments_cleaned"] == summary["segments"] - 1
    name, header, cleaned = asyncio.run(staging_blob(url, topic_id))
    assert {tomb_key(t) for t in header["tombstones"]["records"]} == EXPECTED  # as from the segment files
    assert store_state(url, topic_id, tmp_path) == replay(path)  # nothing changed before the owner applies
    index = log_reads.sync(url, lambda conn: log_reads.row_index(conn, topic_id, 0))
    last_chunk = log_reads.chunks(index, CHUNK)[-1]
    assert header["first"] == 0 and header["last"] == last_chunk.first - 1  # the active chunk is not replaced
    closed_bytes = sum(r.size for r in index if r.base_offset < last_chunk.first)
    assert len(cleaned) == summary["bytes_after"] < closed_bytes and summary["superseded_dropped"] > 0

    with pytest.raises(FencedError):
        asyncio.run(apply(url, topic_id, EPOCH - 1, name, header, cleaned))  # not the owner's: nothing changes
    assert asyncio.run(apply(url, topic_id, EPOCH, name, header, cleaned)) == ([], [])  # applied, blob dropped
    assert store_state(url, topic_id, tmp_path) == replay(path)  # compaction dropped superseded records only
    after = log_reads.sync(url, lambda conn: log_reads.row_index(conn, topic_id, 0))
    assert after[-len([r for r in index if r.base_offset >= last_chunk.first]):] == [
        r for r in index if r.base_offset >= last_chunk.first]
    assert sum(r.size for r in after) < len(data)
    problems, _ = asyncio.run(apply(url, topic_id, EPOCH, name, header, cleaned))  # the rows it read are gone
    assert problems and "changed since the job read them" in problems[0]
