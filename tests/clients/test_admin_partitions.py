"""Real clients against CreatePartitions and DescribeCluster (confluent-kafka, librdkafka).

A consumer group consumes a topic while AdminClient grows it from 2 to 4 partitions: the group
rebalances onto the new partitions (the consumer's metadata refresh sees the count change), and
every message produced to every partition, before and after, is consumed exactly once.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

pytestmark = pytest.mark.integration

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402

PER_PARTITION = 50


def _produce(bootstrap: str, topic: str, partitions: range, tag: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for p in partitions:
        for i in range(PER_PARTITION):
            producer.produce(topic, value=f"{tag}-{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def _consume_until(consumer, seen: Counter, total: int, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while sum(seen.values()) < total and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        seen[msg.value().decode()] += 1


def test_create_partitions_while_a_group_consumes(server_factory):
    server = server_factory()
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    topic = "grown"
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "grow-group",
                         "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000,
                         "session.timeout.ms": 10000})
    try:
        consumer.subscribe([topic])
        seen: Counter = Counter()
        _produce(server.bootstrap, topic, range(2), "before")
        _consume_until(consumer, seen, 2 * PER_PARTITION, 60)
        assert sum(seen.values()) == 2 * PER_PARTITION

        checked = admin.create_partitions([NewPartitions(topic, 4)], validate_only=True)[topic]
        assert checked.result(30) is None
        admin.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
        shrink = admin.create_partitions([NewPartitions(topic, 3)])[topic]
        with pytest.raises(confluent_kafka.KafkaException) as refused:
            shrink.result(30)
        assert refused.value.args[0].code() == confluent_kafka.KafkaError.INVALID_PARTITIONS
        assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 4

        _produce(server.bootstrap, topic, range(4), "after")
        _consume_until(consumer, seen, 6 * PER_PARTITION, 90)
        assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2, 3}
        assert sum(seen.values()) == 6 * PER_PARTITION and set(seen.values()) == {1}  # none lost, none twice
        assert {v.split("-")[1] for v in seen if v.startswith("after")} == {"0", "1", "2", "3"}
    finally:
        consumer.close()
    assert not server.events("handler failed")


def test_describe_cluster(server_factory):
    server = server_factory()
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    described = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert described.cluster_id
    assert [(n.id, n.host, n.port) for n in described.nodes] == [(1, server.host, server.port)]
    assert described.controller.id == 1
    assert described.authorized_operations
