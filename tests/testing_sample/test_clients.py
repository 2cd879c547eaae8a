"""Round trips of the three Python clients against the session's `kafka`, one fresh topic per test."""

from __future__ import annotations

import pytest

RECORDS = 30


@pytest.mark.kafka_topic(partitions=3)
def test_kafka_python_produces_consumes_and_commits(kafka, kafka_topic, kafka_group_id):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks="all")
    for i in range(RECORDS):
        producer.send(kafka_topic, key=str(i % 3).encode(), value=f"v{i}".encode())
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(kafka_topic, bootstrap_servers=kafka.bootstrap_servers, group_id=kafka_group_id,
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=15000)
    seen = set()
    for message in consumer:
        seen.add(message.value.decode())
        if len(seen) == RECORDS:
            break
    consumer.commit()
    ends = consumer.end_offsets([TopicPartition(kafka_topic, p) for p in range(3)])
    committed = {tp: consumer.committed(tp) for tp in ends}
    consumer.close()
    assert seen == {f"v{i}" for i in range(RECORDS)}
    assert committed == ends and sum(ends.values()) == RECORDS


async def test_aiokafka_produces_consumes_and_commits(kafka, kafka_topic, kafka_group_id):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks="all")
    await producer.start()
    try:
        for i in range(RECORDS):
            await producer.send_and_wait(kafka_topic, f"a{i}".encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(kafka_topic, bootstrap_servers=kafka.bootstrap_servers, group_id=kafka_group_id,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        values = []
        async for message in consumer:
            values.append(message.value.decode())
            if len(values) == RECORDS:
                break
        await consumer.commit()
        committed = await consumer.committed(TopicPartition(kafka_topic, 0))
    finally:
        await consumer.stop()
    assert values == [f"a{i}" for i in range(RECORDS)]  # one partition: in order
    assert committed == RECORDS


@pytest.mark.kafka_topic(partitions=2)
def test_confluent_kafka_group_commits_what_it_consumed(kafka, kafka_topic, kafka_group_id):
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i in range(RECORDS):
        producer.produce(kafka_topic, value=f"c{i}".encode(), partition=i % 2)
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": kafka_group_id,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([kafka_topic])
    seen = []
    try:
        while len(seen) < RECORDS:
            message = consumer.poll(15)
            assert message is not None, f"only {len(seen)} of {RECORDS} records arrived"
            assert message.error() is None, message.error()
            seen.append(message.value().decode())
            consumer.commit(message, asynchronous=False)
        committed = consumer.committed([TopicPartition(kafka_topic, p) for p in range(2)], timeout=15)
    finally:
        consumer.close()
    assert sorted(seen) == sorted(f"c{i}" for i in range(RECORDS))
    assert {tp.partition: tp.offset for tp in committed} == {0: RECORDS // 2, 1: RECORDS // 2}


def test_each_test_gets_a_topic_of_its_own(kafka, kafka_topic):
    from confluent_kafka.admin import AdminClient

    topics = AdminClient({"bootstrap.servers": kafka.bootstrap_servers}).list_topics(timeout=10).topics
    assert kafka_topic in topics and len(topics[kafka_topic].partitions) == 1
