"""Real clients: a group of 3 consumes, commits synchronously after each message, the server
is SIGKILLed and restarted on the same log.dirs, and a new member resumes at the committed
offsets: every message is processed (= its commit acknowledged) exactly once overall."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tests.support.data_plane_clients import produce_confluent
from tests.support.server_process import start_server

MESSAGES = 240
PARTITIONS = 6
FIRST_PHASE = 100


class Ledger:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: list[int] = []
        self.stop_at: tuple[int, threading.Event] | None = None

    def add(self, value: bytes) -> None:
        with self.lock:
            self.values.append(int(value))
            # The phase ends at the message that reaches its count, not when the test's 50 ms poll notices:
            # members committing ~10k messages/s between two polls once consumed all 240 in the first phase.
            if self.stop_at is not None and len(self.values) >= self.stop_at[0]:
                self.stop_at[1].set()

    def __len__(self) -> int:
        with self.lock:
            return len(self.values)


def run_kafka_python(bootstrap: str, topic: str, group: str, ledger: Ledger, stop: threading.Event) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=500)
    try:
        while not stop.is_set():
            for tp, messages in consumer.poll(timeout_ms=100, max_records=1).items():
                for m in messages:
                    try:
                        consumer.commit({tp: OffsetAndMetadata(m.offset + 1, "", -1)})
                    except KafkaError:
                        continue  # not processed: another member (or this one, later) redoes it
                    ledger.add(m.value)
    finally:
        consumer.close(autocommit=False)


def run_confluent(bootstrap: str, topic: str, group: str, ledger: Ledger, stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
    consumer.subscribe([topic])
    try:
        while not stop.is_set():
            m = consumer.poll(0.1)
            if m is None or m.error():
                continue
            try:
                consumer.commit(message=m, asynchronous=False)
            except KafkaException:
                continue
            ledger.add(m.value())
    finally:
        consumer.close()


def run_aiokafka(bootstrap: str, topic: str, group: str, ledger: Ledger, stop: threading.Event) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import KafkaError

    async def go() -> None:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                    auto_offset_reset="earliest", session_timeout_ms=10000,
                                    heartbeat_interval_ms=500)
        await consumer.start()
        try:
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=100, max_records=1)
                for tp, messages in batch.items():
                    for m in messages:
                        try:
                            await consumer.commit({TopicPartition(tp.topic, tp.partition): m.offset + 1})
                        except KafkaError:
                            continue
                        ledger.add(m.value)
        finally:
            await consumer.stop()

    asyncio.run(go())


CLIENTS = {"kafka-python": run_kafka_python, "confluent": run_confluent, "aiokafka": run_aiokafka}


def run_members(count: int, runner, bootstrap: str, topic: str, group: str, ledger: Ledger,
                until: int, timeout: float) -> None:
    stop = threading.Event()
    ledger.stop_at = (until, stop)
    errors: list[BaseException] = []

    def member() -> None:
        try:
            runner(bootstrap, topic, group, ledger, stop)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=member, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    while len(ledger) < until and time.monotonic() < deadline and not errors:
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert len(ledger) >= until, f"only {len(ledger)} of {until} messages processed in {timeout}s"


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_group_resumes_at_committed_offsets_after_kill9(tmp_path, client):
    data = str(tmp_path / "data")
    overrides = {"num.partitions": str(PARTITIONS), "group.initial.rebalance.delay.ms": "500"}
    topic, group = f"orders-{client}", f"group-{client}"
    ledger = Ledger()
    server = start_server(data, overrides=overrides)
    try:
        produce_confluent(server.bootstrap, topic, PARTITIONS, MESSAGES)
        run_members(3, CLIENTS[client], server.bootstrap, topic, group, ledger, FIRST_PHASE, 90)
        server.process.kill()  # SIGKILL: no flush, no goodbye
        server.process.wait()
    finally:
        server.kill()
    first = len(ledger)
    server = start_server(data, overrides=overrides)
    try:
        run_members(1, CLIENTS[client], server.bootstrap, topic, group, ledger, MESSAGES, 90)
    finally:
        assert server.stop() == 0
    values = sorted(ledger.values)
    duplicates = sorted({v for v in values if values.count(v) > 1})
    assert not duplicates, f"processed twice: {duplicates[:10]}"
    assert values == list(range(MESSAGES)), f"missing: {sorted(set(range(MESSAGES)) - set(values))[:10]}"
    assert FIRST_PHASE <= first < MESSAGES


def test_librdkafka_commit_to_an_unknown_topic_raises_unknown_topic_or_partition(server):
    """As against Kafka: KafkaApis refuses a commit to a topic its metadata does not have; a
    partition beyond the topic's count likewise; the known partition of the same commit is kept."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    from tests.support.server_process import create_topics

    create_topics(server.host, server.port, {"known": 1})
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "rd-unknown",
                         "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as raised:
            consumer.commit(offsets=[TopicPartition("no-such-topic", 0, 5)], asynchronous=False)
        assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        with pytest.raises(KafkaException) as raised:
            consumer.commit(offsets=[TopicPartition("known", 0, 7), TopicPartition("known", 1, 8)],
                            asynchronous=False)
        assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        [kept, beyond] = consumer.committed([TopicPartition("known", 0), TopicPartition("known", 1)], timeout=10)
        assert (kept.offset, beyond.offset) == (7, -1001)
    finally:
        consumer.close()
