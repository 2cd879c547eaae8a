"""Cluster-mode transactions on a real PostgreSQL: markers queued by one node's coordinator, written by the
partition's holder, the coordinator's wait ended by the holder's NOTIFY; a holder that died before deleting
its rows; a deleted topic's markers; `__transaction_state` created at the first lookup; its partition count
settled in kc_cluster."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from coordinator.cluster.identity import join_cluster
from coordinator.cluster.lazy_topics import TxnTopic
from coordinator.cluster.marker_consumer import MarkerConsumer
from coordinator.cluster.marker_queue import MarkerQueue
from coordinator.config import ConfigError
from coordinator.data_plane.pg_catalog_store import PgCatalogStore
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.errors import UnknownTopicOrPartition
from rules.placement import TRANSACTION_STATE_TOPIC, transaction_state_topic_id
from storage.pg import catalog, txn_markers
from storage.pg.connect import open_pool

OFFSETS_PARTITIONS = 6
LIMIT_S = 30  # a failure, not a hang, if a wait never ends


class Node:
    """What one node runs of the marker relay: its pool, LISTEN connection, queue (the coordinator side) and
    consumer (the holder side) writing through `written`."""

    def __init__(self, pool, topics: dict, held: dict, poll_s: float = 3600) -> None:
        self.pool = pool
        self.held = held
        self.written: list[tuple] = []
        self.hang_after_write = False
        self.consumer = MarkerConsumer(pool, lambda t, p: held.get((t, p)), self.write)
        self.queue = MarkerQueue(pool, lambda name: topics.get(name), poll_s=poll_s, queued=self.consumer.queued)
        self.listener = None

    async def write(self, *marker) -> None:
        self.written.append(marker)
        if self.hang_after_write:  # durable, then the process dies before deleting the row
            await asyncio.Event().wait()

    async def listen(self, url: str) -> Node:
        self.listener = await asyncpg.connect(url)
        await self.listener.add_listener(txn_markers.CHANNEL, lambda c, p, ch, payload: self.queue.notified(payload))
        return self

    async def die(self) -> None:
        await self.consumer.stop()
        await self.queue.stop()
        await self.listener.close()


@pytest.fixture
async def cluster(pg_url):
    """Two pools (nodes) on one database with topic `orders` (2 partitions)."""
    pools = [await open_pool(pg_url), await open_pool(pg_url)]
    cluster_id = await join_cluster(pools[0], OFFSETS_PARTITIONS)
    orders = uuid.uuid4()
    await catalog.apply_changes(pools[0], [catalog.TopicRow("orders", orders, 2, {})])
    yield pools, cluster_id, orders
    for pool in pools:
        await pool.close()


async def test_a_marker_queued_by_the_coordinator_is_written_by_the_holder_whose_notify_ends_the_wait(cluster,
                                                                                                       pg_url):
    (pool_a, pool_b), _, orders = cluster
    topics = {"orders": orders}
    coordinator = await Node(pool_a, topics, {}).listen(pg_url)
    holder = await Node(pool_b, topics, {(orders, 1): "orders"}).listen(pg_url)
    # no poll (poll_s=3600): only the holder's notifications move things
    await asyncio.wait_for(coordinator.queue.remote("orders", 1, 42, 3, True, 7), LIMIT_S)
    await asyncio.wait_for(coordinator.queue.remote("orders", 1, 42, 3, False, 7), LIMIT_S)
    assert holder.written == [("orders", 1, 42, 3, True, 7), ("orders", 1, 42, 3, False, 7)]
    assert coordinator.written == []
    assert await pool_a.fetchval("SELECT count(*) FROM kc_txn_markers") == 0
    for node in (coordinator, holder):
        await node.die()


async def test_a_holder_that_dies_before_deleting_leaves_the_marker_to_the_next_holder(cluster, pg_url):
    (pool_a, pool_b), _, orders = cluster
    topics = {"orders": orders}
    coordinator = await Node(pool_a, topics, {}).listen(pg_url)
    first = await Node(pool_b, topics, {(orders, 0): "orders"}).listen(pg_url)
    first.hang_after_write = True
    wait = asyncio.ensure_future(coordinator.queue.remote("orders", 0, 5, 1, True, 2))
    while not first.written:
        await asyncio.sleep(0.01)
    await first.die()  # kill -9 after the marker was durable, before its row was deleted
    assert not wait.done()
    assert await pool_a.fetchval("SELECT count(*) FROM kc_txn_markers") == 1
    second = await Node(pool_b, topics, {(orders, 0): "orders"}).listen(pg_url)
    second.consumer.taken((orders, 0))  # the next holder takes the partition
    await asyncio.wait_for(wait, LIMIT_S)
    assert second.written == [("orders", 0, 5, 1, True, 2)]  # written again: a repeated marker is harmless
    for node in (coordinator, second):
        await node.die()


async def test_a_marker_waiting_for_a_holder_is_written_when_a_node_takes_the_partition_or_sweeps(cluster,
                                                                                                  pg_url):
    (pool_a, pool_b), _, orders = cluster
    topics = {"orders": orders}
    coordinator = await Node(pool_a, topics, {}).listen(pg_url)
    holder = Node(pool_b, topics, {})  # not listening: it misses every notification
    waits = [asyncio.ensure_future(coordinator.queue.remote("orders", p, 9, 0, True, 1)) for p in (0, 1)]
    while await pool_a.fetchval("SELECT count(*) FROM kc_txn_markers") < 2:
        await asyncio.sleep(0.01)
    holder.held[(orders, 0)] = "orders"
    assert await holder.consumer.sweep() == 1
    await asyncio.wait_for(waits[0], LIMIT_S)
    assert not waits[1].done()
    holder.held[(orders, 1)] = "orders"
    holder.consumer.taken((orders, 1))
    await asyncio.wait_for(waits[1], LIMIT_S)
    assert sorted(holder.written) == [("orders", 0, 9, 0, True, 1), ("orders", 1, 9, 0, True, 1)]
    await coordinator.die()


async def test_deleting_a_topic_ends_the_wait_for_its_markers_and_later_ones_are_refused(cluster, pg_url):
    (pool_a, _), _, orders = cluster
    coordinator = await Node(pool_a, {"orders": orders}, {}, poll_s=0.05).listen(pg_url)
    wait = asyncio.ensure_future(coordinator.queue.remote("orders", 0, 3, 0, False, 1))
    while await pool_a.fetchval("SELECT count(*) FROM kc_txn_markers") < 1:
        await asyncio.sleep(0.01)
    await catalog.apply_changes(pool_a, [], [orders])
    await asyncio.wait_for(wait, LIMIT_S)  # Kafka drops the markers of a deleted partition
    with pytest.raises(UnknownTopicOrPartition):
        await coordinator.queue.remote("orders", 0, 3, 0, False, 1)
    assert await txn_markers.enqueue(pool_a, orders, 0, 3, 0, False, 1) is None
    assert await pool_a.fetchval("SELECT count(*) FROM kc_txn_markers") == 0
    await coordinator.die()


async def test_a_marker_queued_while_its_topic_is_deleted_is_deleted_with_it(cluster):
    (pool_a, pool_b), _, orders = cluster
    async with pool_a.acquire() as deleting:
        transaction = deleting.transaction()
        await transaction.start()
        await deleting.execute("DELETE FROM kc_partitions WHERE topic_id = $1", orders)
        queued = asyncio.ensure_future(txn_markers.enqueue(pool_b, orders, 0, 1, 0, True, 1))
        for _ in range(LIMIT_S * 100):  # the enqueue waits for the partition row
            if queued.done() or await pool_a.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"):
                break
            await asyncio.sleep(0.01)
        assert not queued.done(), "the enqueue did not wait for the topic deletion"
        await deleting.execute("DELETE FROM kc_txn_markers WHERE topic_id = $1", orders)
        await transaction.commit()
    assert await asyncio.wait_for(queued, LIMIT_S) is None
    assert await pool_a.fetchval("SELECT count(*) FROM kc_txn_markers") == 0


async def test_orphaned_markers_are_deleted_by_the_sweep(cluster):
    (pool_a, _), _, orders = cluster
    await pool_a.execute("INSERT INTO kc_txn_markers (topic_id, partition, producer_id, producer_epoch, commit, "
                         "coordinator_epoch) VALUES ($1, 0, 1, 0, true, 1), ($2, 5, 1, 0, true, 1)",
                         uuid.uuid4(), orders)
    assert await txn_markers.delete_orphans(pool_a) == 2  # a topic that is gone, a partition that never was
    assert await txn_markers.delete_orphans(pool_a) == 0


async def test_the_transaction_state_topic_is_created_once_at_the_first_lookup(cluster):
    pools, cluster_id, _ = cluster
    catalogs = [TopicCatalog(cluster_id, OFFSETS_PARTITIONS, PgCatalogStore(pool)) for pool in pools]
    for topics in catalogs:
        await topics.refresh()
    creators = [TxnTopic(pool, topics, cluster_id, 4) for pool, topics in zip(pools, catalogs, strict=True)]
    assert [creator.ready() for creator in creators] == [False, False]  # both nodes race to create it
    await asyncio.gather(*(creator._creating for creator in creators))
    assert [creator.ready() for creator in creators] == [True, True]
    rows = await pools[0].fetch("SELECT name, topic_id, partitions, internal FROM kc_topics WHERE name = $1",
                                TRANSACTION_STATE_TOPIC)
    assert [tuple(r) for r in rows] == [(TRANSACTION_STATE_TOPIC, transaction_state_topic_id(cluster_id), 4, True)]
    assert await pools[0].fetchval("SELECT count(*) FROM kc_partitions WHERE topic_id = $1 AND owner IS NULL",
                                   rows[0]["topic_id"]) == 4
    topic = catalogs[1].get(TRANSACTION_STATE_TOPIC)
    assert topic is not None and topic.internal and catalogs[1].by_id(topic.topic_id) == topic
    third = TopicCatalog(cluster_id, OFFSETS_PARTITIONS, PgCatalogStore(pools[1]))
    await third.refresh()  # a node starting later sees it at its first read
    assert third.get(TRANSACTION_STATE_TOPIC) == topic


async def test_the_transaction_state_partition_count_is_settled_by_the_first_node(cluster):
    (pool_a, pool_b), cluster_id, _ = cluster
    assert await join_cluster(pool_a, OFFSETS_PARTITIONS, 8) == cluster_id  # a cluster from before: stored now
    assert await join_cluster(pool_b, OFFSETS_PARTITIONS, 8) == cluster_id
    with pytest.raises(ConfigError) as refused:
        await join_cluster(pool_b, OFFSETS_PARTITIONS, 50)
    assert "transaction.state.log.num.partitions" in str(refused.value)
    assert "50" in str(refused.value) and "8" in str(refused.value)
