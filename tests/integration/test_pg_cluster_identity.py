"""Cluster mode's cluster-wide identity and producer ids on one real PostgreSQL database."""

from __future__ import annotations

import asyncio
import functools

import pytest
from kio.schema.errors import ErrorCode

from coordinator.cluster.identity import join_cluster
from coordinator.config import ConfigError
from coordinator.data_plane.producer_ids import BLOCK_SIZE, ProducerIdAllocator
from protocol.apis import ApiKey
from rules.placement import offsets_topic_id
from storage.pg.cluster_meta import reserve_producer_ids
from storage.pg.connect import open_pool
from tests.support.data_plane import Plane, ms, req


@pytest.fixture
async def pools(pg_url):
    opened = [await open_pool(pg_url), await open_pool(pg_url)]
    yield opened
    for pool in opened:
        await pool.close()


def allocator(pool) -> ProducerIdAllocator:
    return ProducerIdAllocator(None, reserve_block=functools.partial(reserve_producer_ids, pool))


async def test_the_first_node_creates_the_cluster_id_and_every_node_reads_it(pools):
    ids = await asyncio.gather(join_cluster(pools[0], 6), join_cluster(pools[1], 6))
    assert ids[0] == ids[1] and len(ids[0]) == 22
    assert await join_cluster(pools[1], 6) == ids[0]  # a restart keeps it
    row = await pools[0].fetchrow("SELECT topic_id, partitions, internal FROM kc_topics "
                                  "WHERE name = '__consumer_offsets'")
    assert tuple(row) == (offsets_topic_id(ids[0]), 6, True)
    assert [r[0] for r in await pools[0].fetch("SELECT partition FROM kc_partitions WHERE topic_id = $1 "
                                               "ORDER BY partition", row[0])] == list(range(6))
    assert await pools[0].fetchval("SELECT count(*) FROM kc_topics") == 1


async def test_a_node_with_another_offsets_partition_count_is_refused(pools):
    await join_cluster(pools[0], 6)
    with pytest.raises(ConfigError) as refused:
        await join_cluster(pools[1], 50)
    assert "50" in str(refused.value) and "6" in str(refused.value)
    assert "offsets.topic.num.partitions" in str(refused.value)
    assert await pools[0].fetchval("SELECT value FROM kc_cluster WHERE name = 'offsets.topic.num.partitions'") \
        == "6"


async def test_producer_ids_of_two_nodes_never_collide(pools):
    nodes = [allocator(pools[0]), allocator(pools[1])]

    async def take_many(ids: ProducerIdAllocator, count: int) -> list[int]:
        got = []
        for _ in range(count):
            got.append(await ids.allocate())
        return got

    per_node = await asyncio.gather(*(take_many(ids, BLOCK_SIZE * 2 + 10) for ids in nodes),
                                    *(ids.allocate() for ids in nodes for _ in range(50)))
    every = [i for got in per_node for i in (got if isinstance(got, list) else [got])]
    assert len(every) == len(set(every)) == 2 * (BLOCK_SIZE * 2 + 10) + 100
    assert min(every) == 0
    restarted = allocator(pools[0])  # a restarted node starts a fresh block: no id is reused
    assert await restarted.allocate() > max(every)


def init_producer_id():
    return req(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=None, transaction_timeout=ms(60000), producer_id=-1,
               producer_epoch=-1)


async def test_init_producer_id_takes_ids_from_postgresql_and_is_retriable_while_it_is_unreachable(
        tmp_path, pools, pg_url):
    lost = await open_pool(pg_url)
    await lost.close()
    async with Plane(str(tmp_path)) as plane:
        plane.data.producer_ids = allocator(pools[0])
        answers = [await plane.call(init_producer_id()) for _ in range(3)]
        assert [(a.error_code, a.producer_id, a.producer_epoch) for a in answers] == \
            [(ErrorCode.none, i, 0) for i in range(3)]
        plane.data.producer_ids = allocator(lost)
        answer = await plane.call(init_producer_id())
        assert (answer.error_code, answer.producer_id, answer.producer_epoch) == \
            (ErrorCode.coordinator_load_in_progress, -1, -1)
