"""Topics in cluster mode: deleted through any node, every node forgets them, their rows go, and the name can
be created again at once (a new topic id: none of the old bytes come back)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from tests.clients.produce import create_topic, produce
from tests.support.cluster import ClusterNodes, wait_until

pytestmark = pytest.mark.integration

TOPIC = "doomed"
PARTITIONS = 4


def read_all(bootstrap: str, partitions: int, timeout: float = 20.0) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
        got: list[str] = []
        wait_until(lambda: _poll(consumer, got) and len(got) >= 8, timeout, "the re-created topic's records")
        return sorted(got)
    finally:
        consumer.close()


def _poll(consumer: Consumer, got: list[str]) -> bool:
    message = consumer.poll(0.2)
    if message is not None and message.error() is None:
        got.append(message.value().decode())
    return True


def listed(node) -> bool:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    return TOPIC in admin.list_topics(timeout=10).topics


def test_a_topic_deleted_through_any_node_is_gone_everywhere_and_can_be_created_again(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        nodes = cluster.start_all(2)
        create_topic(nodes[0].bootstrap, TOPIC, PARTITIONS)
        cluster.settled({1, 2})
        produce(cluster.bootstrap(1, 2), TOPIC, PARTITIONS, 40)
        (old_id,) = [r["topic_id"] for r in cluster.query("SELECT topic_id FROM kc_topics WHERE name = $1", TOPIC)]
        assert cluster.query("SELECT count(*) AS n FROM kc_batches WHERE topic_id = $1", old_id)[0]["n"] > 0

        admin = AdminClient({"bootstrap.servers": nodes[1].bootstrap})
        admin.delete_topics([TOPIC], operation_timeout=20)[TOPIC].result(20)
        for table in ("kc_topics", "kc_partitions", "kc_batches"):
            assert cluster.query(f"SELECT count(*) AS n FROM {table} WHERE topic_id = $1", old_id)[0]["n"] == 0
        wait_until(lambda: not any(listed(node) for node in nodes), 10, "every node forgets the topic")

        create_topic(nodes[0].bootstrap, TOPIC, 2)
        cluster.settled({1, 2})
        produce(cluster.bootstrap(1, 2), TOPIC, 2, 8, start=100)
        assert read_all(cluster.bootstrap(1, 2), 2) == sorted(str(i) for i in range(100, 108))
        for node_id in (1, 2):
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()


def test_partitions_created_through_one_node_are_placed_and_served_by_all(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        nodes = cluster.start_all(2)
        create_topic(nodes[0].bootstrap, TOPIC, 2)
        cluster.settled({1, 2})
        admin = AdminClient({"bootstrap.servers": nodes[1].bootstrap})
        admin.create_partitions([NewPartitions(TOPIC, 5)], operation_timeout=20)[TOPIC].result(20)
        assert cluster.query("SELECT partitions FROM kc_topics WHERE name = $1", TOPIC)[0]["partitions"] == 5
        owners = cluster.settled({1, 2})
        assert {p for (name, p) in owners if name == TOPIC} == set(range(5))
        assert {owner for (name, _), (owner, _) in owners.items() if name == TOPIC} == {1, 2}

        def counted(node) -> bool:
            topics = AdminClient({"bootstrap.servers": node.bootstrap}).list_topics(timeout=10).topics
            return TOPIC in topics and len(topics[TOPIC].partitions) == 5

        wait_until(lambda: all(counted(node) for node in nodes), 10, "every node lists 5 partitions")
        produce(cluster.bootstrap(1, 2), TOPIC, 5, 8, start=100)  # read_all waits for 8
        assert read_all(cluster.bootstrap(1, 2), 5) == sorted(str(i) for i in range(100, 108))
        for node_id in (1, 2):
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()
