"""The Spark jobs in cluster mode, on a real PostgreSQL (one Spark session, two job runs).

expire --storage-url reads __consumer_offsets rows, stages a blob per partition, and the blob applied
(fenced) keeps the state while KIP-211 decides as on segment files. bulk_load --storage-url --output URL
reads the rows and publishes snapshot blobs, which the loader of a cluster-mode owner uses."""

from __future__ import annotations

import asyncio
import os

import pytest

from coordinator.groups.settings import GroupSettings
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_all
from coordinator.runtime.timers import FakeScheduler
from spark_jobs.bulk_load import run as bulk_load
from spark_jobs.expire import run
from storage.pg import blobs, log_reads, staged_compaction
from storage.pg.connect import open_pool
from storage.pg.errors import FencedError
from storage.pg.pg_log import PgPartitionLog
from tests.support.expire_cases import DELETE_RETENTION, EXPECTED, NOW, RETENTION_MIN, build_log, tomb_key
from tests.support.pg_offsets import seed
from tests.support.spark import offsets_dir, replay

EPOCH = 3
CHUNK = 700  # bytes of rows per chunk: several closed chunks and an active one


def seeded(tmp_path_factory, postgres_server):
    """The expire tests' log (partition 0, several segments) as rows of a fresh database."""
    path = offsets_dir(str(tmp_path_factory.mktemp("logdirs")), 0)
    build_log(path)
    data = b"".join(open(os.path.join(path, n), "rb").read() for n in sorted(os.listdir(path)) if n.endswith(".log"))
    url = postgres_server.new_database()
    return url, seed(url, {0: data}, epoch=EPOCH), path, data


@pytest.fixture(scope="module")
def staged_in_store(spark, tmp_path_factory, postgres_server):
    url, topic_id, path, data = seeded(tmp_path_factory, postgres_server)
    summary = run(["--storage-url", url, "--chunk-bytes", str(CHUNK), "--offsets-retention-minutes",
                   str(RETENTION_MIN), "--delete-retention-ms", str(DELETE_RETENTION), "--now-ms", str(NOW)],
                  spark=spark)
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


async def load_owner(url, topic_id, root):
    """Take partition 0 as a cluster-mode owner would: replica from the rows, then load_all."""
    pool = await open_pool(url)
    try:
        async with pool.acquire() as conn:
            [info] = await blobs.names(conn, blobs.SNAPSHOT, topic_id, 0)
        durable = DurableLog(root)
        coordinator = GroupCoordinator(GroupSettings(), FakeScheduler(), durable, owned=[0])
        durable.logs[0] = await PgPartitionLog.open(pool, topic_id, 0, EPOCH, durable.path(0))
        [stats] = await load_all(coordinator.owned_shards(), durable, None)
        await durable.close()
    finally:
        await pool.close()
    return info.name, stats, coordinator.owned_shards()[0]


def test_bulk_load_snapshot_blobs_loaded_by_the_owner(spark, tmp_path_factory, postgres_server, tmp_path):
    url, topic_id, path, _ = seeded(tmp_path_factory, postgres_server)
    summary = bulk_load(["--storage-url", url, "--chunk-bytes", str(CHUNK), "--output", url,
                         "--offsets-partitions", "1"], spark=spark)  # every group in partition 0: same layout
    assert summary["snapshots"] == 1 and summary["covers_log_offsets"] == {0: summary["records_read"]}
    assert "postgres@" in summary["output"]
    name, stats, shard = asyncio.run(load_owner(url, topic_id, str(tmp_path / "scratch")))
    assert stats["snapshot"].endswith(name) and stats["log_records"] == 0  # the snapshot covers the rows
    groups, offsets = replay(path)
    assert {(g, t, p): v.offset for g in shard.groups for t, p, v in shard.offsets.items(g)} == {
        (k.group, k.topic, k.partition): v.offset for k, v in offsets.items()}
    assert {g for g, v in groups.items() if v is not None} <= set(shard.groups)
