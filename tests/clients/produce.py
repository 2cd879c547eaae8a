"""Fill topics and read committed offsets from the test side, with confluent-kafka.

Kept apart from the drivers: the scenario under test is the consumer group, so the producer and
the offset check use one well-known client, in-process, with bounded waits.
"""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 20.0) -> None:
    """CreateTopics; an existing topic is fine."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=timeout)[topic]
    try:
        future.result(timeout)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise


def produce(bootstrap: str, topic: str, partitions: int, count: int, start: int = 0,
            timeout: float = 30.0) -> dict[int, list[str]]:
    """Write values str(start..start+count-1), value i to partition i % partitions; returns what each
    partition got, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    errors: list = []
    sent: dict[int, list[str]] = {p: [] for p in range(partitions)}

    def report(err, _msg) -> None:
        if err is not None:
            errors.append(err)

    for i in range(start, start + count):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions, on_delivery=report)
        sent[i % partitions].append(str(i))
        producer.poll(0)
    left = producer.flush(timeout)
    assert left == 0 and not errors, f"produce to {topic}: {left} undelivered, errors {errors[:3]}"
    return sent


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int,
                      timeout: float = 20.0) -> dict[int, int]:
    """OffsetFetch for the group, without joining it: partition -> committed next offset (-1001 = none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=timeout)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in tps}
