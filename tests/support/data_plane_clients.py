"""Real-client producers and assign()-consumers for the data-plane done-when tests and the bench.

Each producer writes message i to partition i % partitions with value b"<i>", so the
expected content of every partition, in order, is known exactly.
"""

from __future__ import annotations

import asyncio
import time

from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest

from tests.support.wire_client import WireClient

MESSAGES = 10_000


def expected(partitions: int, count: int = MESSAGES) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for i in range(count):
        out[i % partitions].append(b"%d" % i)
    return out


# ----------------------------------------------------------------- producers
def produce_confluent(bootstrap: str, topic: str, partitions: int, count: int = MESSAGES, **conf) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    errors = []

    def report(err, _msg) -> None:
        if err is not None:
            errors.append(err)

    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=b"%d" % i, partition=i % partitions, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(30) == 0, "confluent producer did not deliver everything"
    assert not errors, errors[:3]


def produce_kafka_python(bootstrap: str, topic: str, partitions: int, count: int = MESSAGES) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all", enable_idempotence=True)
    try:
        futures = [producer.send(topic, value=b"%d" % i, partition=i % partitions) for i in range(count)]
        producer.flush(30)
        for future in futures:
            future.get(timeout=30)
    finally:
        producer.close(5)


def produce_aiokafka(bootstrap: str, topic: str, partitions: int, count: int = MESSAGES) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all", enable_idempotence=True)
        await producer.start()
        try:
            futures = [await producer.send(topic, value=b"%d" % i, partition=i % partitions) for i in range(count)]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


# ----------------------------------------------------------------- consumers
def consume_confluent(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 30.0):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assign-only",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline, seen = time.monotonic() + timeout, 0
        while seen < count and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                assert msg.error() is None, msg.error()
                got[msg.partition()].append((msg.offset(), msg.value()))
                seen += 1
    finally:
        consumer.close()
    return got


def consume_kafka_python(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 30.0):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline, seen = time.monotonic() + timeout, 0
        while seen < count and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500, max_records=5000).items():
                for record in records:
                    got[tp.partition].append((record.offset, record.value))
                    seen += 1
    finally:
        consumer.close()
    return got


def consume_aiokafka(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 30.0):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                    auto_offset_reset="earliest")
        await consumer.start()
        got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            deadline, seen = time.monotonic() + timeout, 0
            while seen < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500, max_records=5000)
                for tp, records in batches.items():
                    for record in records:
                        got[tp.partition].append((record.offset, record.value))
                        seen += 1
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


PRODUCERS = {"confluent": produce_confluent, "kafka-python": produce_kafka_python, "aiokafka": produce_aiokafka}
CONSUMERS = {"confluent": consume_confluent, "kafka-python": consume_kafka_python, "aiokafka": consume_aiokafka}


def create_topic(server, name: str, partitions: int) -> None:
    import datetime

    with WireClient(server.host, server.port) as client:
        response = client.call(CreateTopicsRequest(
            topics=(CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, assignments=(),
                                   configs=()),),
            timeout=datetime.timedelta(seconds=5), validate_only=False))
        assert response.topics[0].error_code == 0, response
