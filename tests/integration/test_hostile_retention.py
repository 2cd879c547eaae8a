"""A producer that never stops cannot fill the disk: the broker's log.retention.bytes bounds every
topic it auto-creates, while the server (under a container-like memory limit) keeps answering a
well-behaved client and keeps the offsets committed before the flood."""

from __future__ import annotations

import os
import time

import pytest

from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, start_limited_server
from tests.support.storage_log import log_bytes

pytestmark = pytest.mark.integration

RETENTION_BYTES = 256 * 1024
SEGMENT_BYTES = 64 * 1024
FLOOD_BYTES = 24 * 1024 * 1024


def test_a_flooding_producer_is_bounded_by_log_retention_bytes(tmp_path):
    from confluent_kafka import Producer

    server = start_limited_server(str(tmp_path), {"log.retention.bytes": str(RETENTION_BYTES),
                                                  "log.segment.bytes": str(SEGMENT_BYTES),
                                                  "log.retention.check.interval.ms": "200"})
    committed = {("flood", 0): 42}
    try:
        commit_offsets(server, "victims", committed)
        with Watchdog(server) as watchdog:
            producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "1", "linger.ms": 5,
                                 "batch.size": 16384, "queue.buffering.max.kbytes": 4096})
            value = os.urandom(1000)
            for _ in range(FLOOD_BYTES // len(value)):
                while True:
                    try:
                        producer.produce("flood", value)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
            assert producer.flush(60) == 0
            # one check later, what is left is at most retention.bytes plus the active segment
            deadline = time.monotonic() + 10
            while log_bytes(str(tmp_path), "flood") > RETENTION_BYTES + SEGMENT_BYTES and time.monotonic() < deadline:
                time.sleep(0.1)
            assert log_bytes(str(tmp_path), "flood") <= RETENTION_BYTES + SEGMENT_BYTES
            watchdog.check()
        assert server.process.poll() is None
        assert_commits_survive(server, "victims", committed)
    finally:
        server.stop()
