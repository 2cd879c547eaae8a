"""confluent-kafka's ShareConsumer against the real server: consumers, a producer, a consumer in a process of
its own (to be killed -9 or frozen while it holds records), and group configs set with its AdminClient."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from tests.support.server_process import ROOT

#: the settings share-group tests run the server with: assignments within a second, locks of a few seconds
FAST_SHARE = {"group.share.heartbeat.interval.ms": "500", "group.share.min.heartbeat.interval.ms": "500",
              "group.share.record.lock.duration.ms": "3000", "group.share.min.record.lock.duration.ms": "1000"}


def alter_group_configs(admin: AdminClient, group: str, **configs: str) -> None:
    """IncrementalAlterConfigs SET of `configs` on the GROUP resource `group` (KafkaException as the answer's)."""
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in configs.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)


def share_consumer(bootstrap: str, group: str, topics: list[str], **conf: Any) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **conf})
    consumer.subscribe(topics)
    return consumer


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0, per_batch: int = 0) -> None:
    """`values` into the partition; `per_batch` > 0: a flush after each `per_batch` records, so that the log holds
    batches of that many (a share partition acquires whole batches: MaxRecords is aligned to them)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i, value in enumerate(values, 1):
        producer.produce(topic, value=value, partition=partition)
        if per_batch and i % per_batch == 0:
            assert producer.flush(15) == 0
    assert producer.flush(15) == 0


def poll_until(consumer: ShareConsumer, done: Callable[[list], bool], timeout: float = 30.0,
               on_batch: Callable[[list], None] | None = None) -> list:
    """Poll until `done(messages so far)`; each batch goes to `on_batch` (explicit acknowledgements)."""
    got: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not done(got):
        batch = [m for m in consumer.poll(0.5) or [] if m.error() is None]
        if on_batch is not None:
            on_batch(batch)
        got.extend(batch)
    return got


def joined(consumer: ShareConsumer, polls: int = 6) -> None:
    """Poll a few times so the member joins and gets its assignment (share.auto.offset.reset=latest: records
    produced before a share partition's first fetch are not delivered)."""
    for _ in range(polls):
        consumer.poll(0.5)


HOLDER = r"""
import json, sys, time
from confluent_kafka import ShareConsumer
bootstrap, group, topic, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"})
c.subscribe([topic])
held = []
while len(held) < want:
    held += [m.offset() for m in c.poll(0.5) or [] if m.error() is None]
print(json.dumps(held), flush=True)
time.sleep(3600)
"""


def holding_consumer(bootstrap: str, group: str, topic: str, want: int, timeout: float = 30.0
                     ) -> tuple[subprocess.Popen, list[int]]:
    """A share consumer in its own process that acquires at least `want` records and holds them (no
    acknowledgement); returns the process and the offsets it holds."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, bootstrap, group, topic, str(want)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline and not line:
        line = process.stdout.readline()
    if not line:
        process.kill()
        raise AssertionError("the holding consumer acquired nothing")
    return process, json.loads(line)
