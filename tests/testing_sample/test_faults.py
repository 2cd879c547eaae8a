"""Fault injection with a server of the test's own (`isolated_kafka`): SIGKILL and restart mid-consume, SIGSTOP."""

from __future__ import annotations

import threading
import time

TOPIC = "payments"
PARTITIONS = 2
RECORDS = 400
GROUP = "payments-service"


def produce_all(bootstrap: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(count):
        producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


class CommittingConsumer(threading.Thread):
    """Consumes one record at a time and commits it synchronously; remembers every commit the server
    acknowledged (a commit that raised is not counted)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False, "session.timeout.ms": 10000,
                                  "max.poll.interval.ms": 60000})
        self.consumer.subscribe([TOPIC])
        self.values: set[str] = set()
        self.acked: dict[int, int] = {}
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + 120
        while len(self.values) < RECORDS and time.monotonic() < deadline:
            message = self.consumer.poll(0.5)
            if message is None or message.error():
                continue
            try:
                self.consumer.commit(message, asynchronous=False)
            except KafkaException as exc:  # the broker is down: the record comes again from the last commit
                self.errors.append(str(exc))
                continue
            with self.lock:
                self.values.add(message.value().decode())
                self.acked[message.partition()] = message.offset() + 1
        self.done.set()

    def acknowledged(self) -> dict[int, int]:
        with self.lock:
            return dict(self.acked)


def committed_offsets(bootstrap: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        found = reader.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        reader.close()
    return {tp.partition: tp.offset for tp in found}


def test_kill_and_restart_mid_consume_loses_no_committed_offset(isolated_kafka):
    kafka = isolated_kafka
    kafka.create_topic(TOPIC, PARTITIONS)
    produce_all(kafka.bootstrap_servers, RECORDS)
    consumer = CommittingConsumer(kafka.bootstrap_servers)
    consumer.start()
    try:
        deadline = time.monotonic() + 60
        while sum(consumer.acknowledged().values()) < RECORDS // 4:
            assert time.monotonic() < deadline, "the consumer did not get going"
            time.sleep(0.01)
        before_kill = consumer.acknowledged()  # every one of these was acknowledged: it must survive SIGKILL
        kafka.kill()
        kafka.restart()
        after = committed_offsets(kafka.bootstrap_servers)
        assert all(after[p] >= offset for p, offset in before_kill.items()), (before_kill, after)
        assert consumer.done.wait(120), f"consumed {len(consumer.values)} of {RECORDS} after the restart"
    finally:
        consumer.join(5)
        consumer.consumer.close()
    assert consumer.values == {str(i) for i in range(RECORDS)}  # nothing produced before the kill was lost
    assert committed_offsets(kafka.bootstrap_servers) == dict.fromkeys(range(PARTITIONS), RECORDS // PARTITIONS)
    assert sum(before_kill.values()) < RECORDS, "the kill came after the consumer had finished"


def test_a_paused_broker_times_requests_out_until_resumed(isolated_kafka):
    from confluent_kafka import Producer

    kafka = isolated_kafka
    kafka.create_topic(TOPIC, 1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "message.timeout.ms": 60000})
    producer.produce(TOPIC, b"before")
    assert producer.flush(15) == 0
    kafka.pause()
    try:
        producer.produce(TOPIC, b"while paused")
        assert producer.flush(2) == 1, "a frozen broker answered"
    finally:
        kafka.resume()
    assert producer.flush(30) == 0  # delivered once the broker runs again
