"""Real clients bootstrap, negotiate versions, read Metadata and find their group's coordinator."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

pytestmark = pytest.mark.integration


def test_kafka_python_admin(server):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id="kp-admin")
    try:
        assert "__consumer_offsets" in admin.list_topics()
        cluster = admin.describe_cluster()
        assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == [(1, server.host, server.port)]
        assert cluster["cluster_id"] == server.events("listening")[0]["cluster_id"]
        assert admin._manager.run(admin._find_coordinator_id, "my-group") == 1
    finally:
        admin.close()


def test_aiokafka_client(server):
    from aiokafka import AIOKafkaClient

    async def scenario():
        client = AIOKafkaClient(bootstrap_servers=server.bootstrap)
        await client.bootstrap()
        try:
            brokers = client.cluster.brokers()
            assert [(b.nodeId, b.host, b.port) for b in brokers] == [(1, server.host, server.port)]
            assert await client.coordinator_lookup(0, "my-group") == 1  # 0 = group key type
            everything = await client.fetch_all_metadata()
            assert "__consumer_offsets" in everything.topics(exclude_internal_topics=False)
            assert everything.internal_topics == {"__consumer_offsets"}
        finally:
            await client.close()

    asyncio.run(scenario())


def test_confluent_kafka_admin_list_topics(server):
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": server.bootstrap}).list_topics(timeout=15)
    assert {b.id: (b.host, b.port) for b in metadata.brokers.values()} == {1: (server.host, server.port)}
    assert metadata.controller_id == 1
    offsets = metadata.topics["__consumer_offsets"]
    assert offsets.error is None and len(offsets.partitions) == 50
    assert metadata.cluster_id == server.events("listening")[0]["cluster_id"]


def test_confluent_kafka_consumer_finds_the_coordinator(server):
    from confluent_kafka import Consumer

    messages: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger("test-librdkafka")
    logger.addHandler(Capture())
    logger.setLevel(logging.DEBUG)
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "my-group", "debug": "cgrp"},
                        logger=logger)
    expected = f'Group "my-group" coordinator is {server.host}:{server.port} id 1'
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(expected in m for m in messages):
            consumer.poll(0.1)
    finally:
        consumer.close()
    assert any(expected in m for m in messages), [m for m in messages if "oordinator" in m][:5]
