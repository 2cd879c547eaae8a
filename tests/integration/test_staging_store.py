"""Cluster mode: the owner applies the expire job's staging blob (coordinator/runtime/staging_store.py)
on a real PostgreSQL: fenced row replacement, replica rebuilt, expiry tombstones re-decided on live state."""

from __future__ import annotations

import os
import uuid

import pytest

from coordinator.groups.settings import GroupSettings
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_all
from coordinator.runtime.staging import check_partition
from coordinator.runtime.timers import FakeScheduler
from storage.pg import blobs, log_reads, ownership
from storage.pg.connect import open_pool
from storage.pg.pg_log import RELOADED_SUFFIX, PgPartitionLog
from tests.support.expire_cases import RETENTION, same_partition_groups
from tests.support.pg_offsets import stage_compaction

TOPIC = uuid.UUID("00000000-0000-0000-0000-0000000000c0")


@pytest.fixture
async def pool(pg_url):
    pool = await open_pool(pg_url)
    await ownership.ensure_partitions(pool, TOPIC, 50)
    yield pool
    await pool.close()


async def owner(pool, root: str, partition: int, clock: FakeScheduler, epoch: int):
    durable = DurableLog(root)
    coordinator = GroupCoordinator(GroupSettings(offsets_retention_ms=RETENTION), clock, durable, owned=[partition])
    durable.logs[partition] = await PgPartitionLog.open(pool, TOPIC, partition, epoch, durable.path(partition))
    shards = coordinator.owned_shards()
    await load_all(shards, durable, None)
    return durable, coordinator, shards[0]


async def take(pool, partition: int, node_id: int) -> int:
    """The partition's epoch moved to a new owner (ownership.acquire without the leases)."""
    return await pool.fetchval("UPDATE kc_partitions SET owner = $3, epoch = epoch + 1 WHERE topic_id = $1 "
                               "AND partition = $2 RETURNING epoch", TOPIC, partition, node_id)


async def rows(pool, partition):
    async with pool.acquire() as conn:
        return await log_reads.row_index(conn, TOPIC, partition)


async def test_staging_blob_applied_replica_rebuilt_tombstones_rechecked(pool, tmp_path):
    dead, alive, p = same_partition_groups()
    epoch = await take(pool, p, 1)
    clock = FakeScheduler()
    durable, coordinator, shard = await owner(pool, str(tmp_path), p, clock, epoch)
    old = clock.wall_ms()
    for i in range(30):  # superseded commits, one row per write
        await shard.write([OffsetCommitRecord(dead, "t", 0, OffsetValue(i, "", old)),
                           OffsetCommitRecord(alive, "t", 0, OffsetValue(i, "", old))])
    before = await rows(pool, p)
    clock.advance(RETENTION + 1)
    now = clock.wall_ms()
    async with pool.acquire() as conn:
        await stage_compaction(conn, TOPIC, p, before[-2].base_offset, [
            {"type": "offset_commit", "group": dead, "topic": "t", "partition": 0, "decided_on_offset": 58},
            {"type": "offset_commit", "group": alive, "topic": "t", "partition": 0, "decided_on_offset": 59},
            {"type": "group_metadata", "group": dead, "decided_on_offset": None}],
            {"offsets.retention.ms": RETENTION, "now_ms": now})
    # "alive" commits again after the job read the rows: its tombstone must be dropped
    await shard.write([OffsetCommitRecord(alive, "t", 0, OffsetValue(99, "", now))])
    old_log = durable.logs[p]
    assert await check_partition(coordinator, durable, p) == ["applied"]
    after = await rows(pool, p)
    upper = before[-2].base_offset
    assert sum(r.size for r in after if r.base_offset < upper) < sum(r.size for r in before[:-2])
    assert [r for r in after if r.base_offset >= upper][:2] == before[-2:]  # rows the job did not read: as they were
    async with pool.acquire() as conn:
        assert await blobs.names(conn, blobs.STAGING, TOPIC, p) == []
    reloaded = durable.logs[p]
    assert reloaded is old_log and reloaded.path == durable.path(p) + RELOADED_SUFFIX  # a rebuilt replica
    assert not os.path.exists(durable.path(p))
    await durable.flush()
    assert coordinator.group(dead) is None
    assert {(t, q): v.offset for t, q, v in shard.offsets.items(alive)} == {("t", 0): 99}
    # commits keep working on the rebuilt replica, and a new owner loads the same state from the rows
    await shard.write([OffsetCommitRecord(alive, "t", 1, OffsetValue(5, "", now))])
    await durable.flush()
    async with pool.acquire() as conn:  # the replica holds exactly the rows
        assert reloaded.read(0, 1 << 20) == await log_reads.range_bytes(conn, TOPIC, p, 0, 1 << 62)
    await durable.close()
    epoch2 = await take(pool, p, 2)
    durable2, _, shard2 = await owner(pool, str(tmp_path / "next"), p, FakeScheduler(), epoch2)
    assert shard2.offsets.by_group == shard.offsets.by_group and set(shard2.groups) == {alive}
    await durable2.close()


async def test_staging_blob_refused_when_rows_changed(pool, tmp_path, capsys):
    dead, alive, p = same_partition_groups()
    epoch = await take(pool, p, 1)
    clock = FakeScheduler()
    durable, coordinator, shard = await owner(pool, str(tmp_path), p, clock, epoch)
    for i in range(10):
        await shard.write([OffsetCommitRecord(dead, "t", 0, OffsetValue(i, "", clock.wall_ms()))])
    before = await rows(pool, p)
    async with pool.acquire() as conn:
        header = await stage_compaction(conn, TOPIC, p, before[-1].base_offset, [],
                                        {"offsets.retention.ms": RETENTION, "now_ms": clock.wall_ms()})
        await conn.execute("UPDATE kc_partitions SET log_start = 3 WHERE topic_id = $1 AND partition = $2", TOPIC, p)
        await conn.execute("DELETE FROM kc_batches WHERE topic_id = $1 AND partition = $2 AND base_offset < 3",
                           TOPIC, p)  # as retention would: the job's rows are no longer all there
    assert header["replaced"]
    assert await check_partition(coordinator, durable, p) == ["refused"]
    assert "staged compaction refused" in capsys.readouterr().out
    assert await rows(pool, p) == [r for r in before if r.base_offset >= 3]
    async with pool.acquire() as conn:
        assert await blobs.names(conn, blobs.STAGING, TOPIC, p) == []
    await durable.close()

