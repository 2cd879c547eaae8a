"""The topic catalog in cluster mode: two catalogs ("nodes") on one real PostgreSQL database."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.cluster.identity import join_cluster
from coordinator.data_plane.pg_catalog_store import PgCatalogStore
from coordinator.data_plane.topic_catalog import TopicCatalog
from protocol.apis import ApiKey
from storage.errors import StorageError
from storage.pg import catalog as sql
from storage.pg.connect import open_pool
from storage.pg.errors import StoreUnavailableError
from storage.pg.notify import CHANNEL
from tests.support.data_plane import Plane, ms, req

OFFSETS_PARTITIONS = 6


@pytest.fixture
async def nodes(pg_url):
    """Two pools on one database, as two nodes have, and the cluster id."""
    pools = [await open_pool(pg_url), await open_pool(pg_url)]
    cluster_id = await join_cluster(pools[0], OFFSETS_PARTITIONS)
    yield pools, cluster_id
    for pool in pools:
        await pool.close()


def catalog(pool, cluster_id) -> TopicCatalog:
    return TopicCatalog(cluster_id, OFFSETS_PARTITIONS, PgCatalogStore(pool))


async def partition_rows(pool, topic_id) -> list[int]:
    return [r[0] for r in await pool.fetch("SELECT partition FROM kc_partitions WHERE topic_id = $1 "
                                           "ORDER BY partition", topic_id)]


async def test_a_topic_created_on_one_node_shows_on_the_other_after_refresh(nodes):
    (pool_a, pool_b), cluster_id = nodes
    a, b = catalog(pool_a, cluster_id), catalog(pool_b, cluster_id)
    orders = a.reserve("orders", 3, {"retention.ms": "1000"})
    assert await a.commit([orders]) == set()
    assert a.get("orders") == orders and b.get("orders") is None
    assert await partition_rows(pool_a, orders.topic_id) == [0, 1, 2]

    appeared, vanished = await b.refresh()
    assert (appeared, vanished) == ([orders], [])
    assert b.get("orders") == orders and b.by_id(orders.topic_id) == orders
    assert b.get("orders").config_map() == {"retention.ms": "1000"}
    assert b.get("__consumer_offsets") == a.get("__consumer_offsets")
    assert b.colliding("orders") is None and b.colliding("ord_ers") is None and b.taken("orders")
    assert await b.refresh() == ([], [])  # nothing changed since


async def test_delete_removes_every_row_of_the_topic_id(nodes):
    (pool_a, pool_b), cluster_id = nodes
    a, b = catalog(pool_a, cluster_id), catalog(pool_b, cluster_id)
    doomed, kept = a.reserve("doomed", 2), a.reserve("kept", 1)
    await a.commit([doomed, kept])
    for topic in (doomed, kept):
        await pool_a.execute("INSERT INTO kc_batches (topic_id, partition, base_offset, last_offset, max_timestamp, "
                             "data) VALUES ($1, 0, 0, 0, 0, '\\x00')", topic.topic_id)
        await pool_a.execute("INSERT INTO kc_blobs (kind, topic_id, partition, name, data) "
                             "VALUES ('snapshot', $1, 0, 's', '\\x00')", topic.topic_id)
    await b.refresh()

    a.drop("doomed")
    await a.commit()
    for table in ("kc_topics", "kc_partitions", "kc_batches", "kc_blobs"):
        ids = {r[0] for r in await pool_a.fetch(f"SELECT topic_id FROM {table}")}
        assert doomed.topic_id not in ids and kept.topic_id in ids, table
    assert await b.refresh() == ([], [doomed])
    assert b.get("doomed") is None and b.by_id(doomed.topic_id) is None and b.get("kept") == kept


async def test_racing_creates_of_one_name_make_one_topic(nodes):
    (pool_a, pool_b), cluster_id = nodes
    a, b = catalog(pool_a, cluster_id), catalog(pool_b, cluster_id)
    mine, theirs = a.reserve("race", 1), b.reserve("race", 4)
    lost_a, lost_b = await asyncio.gather(a.commit([mine]), b.commit([theirs]))
    assert sorted([lost_a, lost_b], key=len) == [set(), {"race"}]  # exactly one node lost
    winner = mine if not lost_a else theirs
    assert a.get("race") == b.get("race") == winner  # the loser learnt the winner's id and partitions
    assert [r[0] for r in await pool_a.fetch("SELECT topic_id FROM kc_topics WHERE name = 'race'")] == \
        [winner.topic_id]
    assert await partition_rows(pool_a, winner.topic_id) == list(range(winner.partitions))
    loser = theirs if winner is mine else mine
    assert await partition_rows(pool_a, loser.topic_id) == []


def create(name: str):
    return req(ApiKey.CREATE_TOPICS, 7, timeout=ms(1000), validate_only=False, topics=[
        {"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}])


def metadata(name: str):
    return req(ApiKey.METADATA, 12, topics=[{"name": name, "topic_id": None}], allow_auto_topic_creation=True,
               include_topic_authorized_operations=False, include_cluster_authorized_operations=False)


async def test_two_nodes_auto_creating_one_name_make_one_topic(nodes, tmp_path):
    (pool_a, pool_b), cluster_id = nodes
    async with Plane(str(tmp_path / "a"), catalog(pool_a, cluster_id)) as a, \
            Plane(str(tmp_path / "b"), catalog(pool_b, cluster_id)) as b:
        answers = await asyncio.gather(a.call(metadata("auto")), b.call(metadata("auto")))
        assert [r.topics[0].error_code for r in answers] == [ErrorCode.leader_not_available] * 2
        assert await pool_a.fetchval("SELECT count(*) FROM kc_topics WHERE name = 'auto'") == 1
        assert a.data.catalog.get("auto") == b.data.catalog.get("auto") is not None
        loser = a if a.data.partition("auto", 0) is None else b
        assert loser.data.partition("auto", 0) is None and not os.path.exists(os.path.join(loser.log_dir, "auto-0"))

        created = await a.call(create("explicit"))
        assert created.topics[0].error_code == ErrorCode.none
        refused = await b.call(create("explicit"))  # b has not refreshed: the name looked free to it
        assert refused.topics[0].error_code == ErrorCode.topic_already_exists
        assert b.data.catalog.get("explicit") == a.data.catalog.get("explicit")
        assert b.data.partition("explicit", 0) is None


async def test_a_change_notifies_the_other_nodes(nodes):
    (pool_a, pool_b), cluster_id = nodes
    heard: asyncio.Queue = asyncio.Queue()

    def on_notify(connection, pid, channel, payload) -> None:
        heard.put_nowait(payload)

    listener = await pool_b.acquire()
    await listener.add_listener(CHANNEL, on_notify)
    try:
        a = catalog(pool_a, cluster_id)
        await a.commit([a.reserve("loud", 1)])
        assert {await asyncio.wait_for(heard.get(), 10) for _ in range(2)} == {"topics", "partitions"}
        a.drop("loud")
        await a.commit()
        assert {await asyncio.wait_for(heard.get(), 10) for _ in range(2)} == {"topics", "partitions"}
        assert heard.empty()
    finally:
        await listener.remove_listener(CHANNEL, on_notify)
        await pool_b.release(listener)


async def test_a_failed_write_shows_nothing_and_keeps_the_drop_for_the_next_commit(nodes, pg_url):
    (pool_a, _), cluster_id = nodes
    store = PgCatalogStore(pool_a)
    a = TopicCatalog(cluster_id, OFFSETS_PARTITIONS, store)
    await a.commit([a.reserve("old", 1)])
    a.drop("old")
    store.pool = await open_pool(pg_url)
    await store.pool.close()  # PostgreSQL is unreachable for this node
    new = a.reserve("new", 1)
    with pytest.raises(StoreUnavailableError):
        await a.commit([new])
    a.release(["new"])
    assert a.get("new") is None and a.get("old") is None and not a.taken("new")
    assert await pool_a.fetchval("SELECT count(*) FROM kc_topics WHERE name = 'old'") == 1

    store.pool = pool_a  # reachable again
    await a.refresh()
    assert a.get("old") is None  # a drop not yet stored is not undone by a refresh
    await a.commit()
    assert await pool_a.fetchval("SELECT count(*) FROM kc_topics WHERE name = 'old'") == 0


async def test_a_new_name_with_a_taken_topic_id_is_refused_not_retried_forever(nodes):
    (pool_a, _), cluster_id = nodes
    first = await sql.apply_changes(pool_a, [sql.TopicRow("first", uuid.uuid4(), 1, {})])
    with pytest.raises(StorageError, match="ids belong to other topics"):
        await sql.apply_changes(pool_a, [sql.TopicRow("second", first[0].topic_id, 1, {})])
    assert await pool_a.fetchval("SELECT count(*) FROM kc_topics WHERE name = 'second'") == 0


async def test_create_and_delete_topics_answer_request_timed_out_while_postgresql_is_unreachable(nodes, pg_url,
                                                                                                 tmp_path):
    (pool_a, _), cluster_id = nodes
    store = PgCatalogStore(pool_a)
    async with Plane(str(tmp_path), TopicCatalog(cluster_id, OFFSETS_PARTITIONS, store)) as plane:
        assert (await plane.call(create("kept"))).topics[0].error_code == ErrorCode.none
        store.pool = await open_pool(pg_url)
        await store.pool.close()  # PostgreSQL is unreachable for this node
        answer = await plane.call(create("new"))
        assert answer.topics[0].error_code == ErrorCode.request_timed_out
        deleted = await plane.call(req(ApiKey.DELETE_TOPICS, 4, topic_names=["kept"], timeout=ms(1000)))
        assert deleted.responses[0].error_code == ErrorCode.request_timed_out
        store.pool = pool_a
        assert await pool_a.fetchval("SELECT count(*) FROM kc_topics WHERE name IN ('new', 'kept')") == 1
        assert (await plane.call(create("new"))).topics[0].error_code == ErrorCode.none  # the name is free again
        assert await pool_a.fetchval("SELECT array_agg(name) FROM kc_topics WHERE NOT internal") == ["new"]


async def test_a_config_change_on_one_node_is_applied_on_the_other_without_rehosting(nodes):
    (pool_a, pool_b), cluster_id = nodes
    a, b = catalog(pool_a, cluster_id), catalog(pool_b, cluster_id)
    topic = a.reserve("cfg", 2, {"retention.ms": "1000"})
    await a.commit([topic])
    await b.refresh()
    seen: list = []
    b.on_reconfigured = seen.append
    changed = await a.set_configs(topic, {"segment.ms": "5000"})
    assert changed is not None and a.get("cfg").config_map() == {"segment.ms": "5000"}
    assert await b.refresh() == ([], [])  # the same topic: its partitions stay hosted
    assert b.get("cfg").config_map() == {"segment.ms": "5000"} and seen == [b.get("cfg")]
    a.drop("cfg")
    await a.commit()
    assert await b.set_configs(b.get("cfg"), {}) is None  # deleted meanwhile: nothing stored


async def test_dynamic_broker_configs_are_shared_through_postgresql(nodes, tmp_path):
    from coordinator.data_plane.pg_catalog_store import PgDynamicConfigStore

    (pool_a, pool_b), cluster_id = nodes
    async with Plane(str(tmp_path / "a"), catalog(pool_a, cluster_id), PgDynamicConfigStore(pool_a)) as a, \
            Plane(str(tmp_path / "b"), catalog(pool_b, cluster_id), PgDynamicConfigStore(pool_b),
                  **{"node.id": "2"}) as b:
        await a.create("t")
        await b.data.catalog.refresh()
        await a.services.dynamic.set("", {"log.retention.ms": "5000"})
        await a.services.dynamic.set("1", {"log.retention.bytes": "77"})
        assert await pool_a.fetch("SELECT level, name, value FROM kc_broker_configs ORDER BY level") == [
            ("", "log.retention.ms", "5000"), ("1", "log.retention.bytes", "77")]
        await b.services.dynamic.refresh()  # what a NOTIFY 'broker_configs' makes every node do
        assert b.services.dynamic.topic_base()["retention.ms"] == "5000"
        assert b.services.dynamic.topic_base()["retention.bytes"] == "-1"  # node 1's own config is not node 2's
        assert a.data.base_configs["retention.bytes"] == "77"
    async with Plane(str(tmp_path / "c"), catalog(pool_b, cluster_id), PgDynamicConfigStore(pool_b)) as again:
        assert again.data.base_configs["retention.ms"] == "5000"  # kept across a restart (read at start)
        assert again.services.dynamic.broker == {"log.retention.bytes": "77"}
        await again.services.dynamic.set("", {})
    assert await pool_a.fetch("SELECT level FROM kc_broker_configs") == [("1",)]
