"""Topic retention and DeleteRecords against the real server process with real clients:
segments deleted by retention.bytes / retention.ms, the log start offset moving (Fetch below it
answers OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST follows it), an idle topic whose records all
expired keeping none of them (earliest == latest), DeleteRecords through confluent-kafka's
AdminClient, and the log start offset surviving a restart and kill -9."""

from __future__ import annotations

import os
import time

import pytest
from kio.schema.errors import ErrorCode

from tests.support.server_process import start_server
from tests.support.storage_log import log_bytes
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

SEGMENT = 4096
VALUE = b"x" * 200


def create(server, name: str, **configs: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    futures = admin.create_topics([NewTopic(name, 1, 1, config={"segment.bytes": str(SEGMENT), **configs})])
    futures[name].result(10)


def produce(server, topic: str, count: int, timestamp: int = 0) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", "linger.ms": 0,
                         "batch.size": SEGMENT // 2})
    errors = []
    for i in range(count):
        producer.produce(topic, VALUE, key=b"%d" % i, timestamp=timestamp,
                         on_delivery=lambda err, _m: err and errors.append(err))
        producer.poll(0)
    assert producer.flush(30) == 0 and not errors, errors


def watermarks(server, topic: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "wm", "enable.auto.commit": False})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()


def raw_fetch(server, topic: str, offset: int):
    import datetime

    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

    request = FetchRequest(replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20,
                           isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
                           topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
                               partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                               log_start_offset=-1, partition_max_bytes=1 << 20),)),))
    with WireClient(server.host, server.port) as client:
        return client.call(request).responses[0].partitions[0]


def segment_bases(log_dir: str, topic: str) -> list[int]:
    path = os.path.join(log_dir, f"{topic}-0")
    return sorted(int(n[:20]) for n in os.listdir(path) if n.endswith(".log"))


def wait_until(predicate, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_retention_bytes_deletes_old_segments_and_moves_the_log_start(tmp_path):
    server = start_server(str(tmp_path), {"log.retention.check.interval.ms": "100"})
    try:
        create(server, "sized", **{"retention.bytes": str(3 * SEGMENT)})
        create(server, "kept")
        produce(server, "sized", 200)  # ~46 KB: ~12 segments of up to 4 KB
        produce(server, "kept", 200)
        # what stays: at least retention.bytes, and less than that plus the oldest segment kept
        wait_until(lambda: log_bytes(str(tmp_path), "sized") < 4 * SEGMENT)
        assert log_bytes(str(tmp_path), "sized") >= 3 * SEGMENT
        low, high = watermarks(server, "sized")
        assert high == 200 and low == segment_bases(str(tmp_path), "sized")[0] > 0
        assert raw_fetch(server, "sized", low - 1).error_code == ErrorCode.offset_out_of_range
        answer = raw_fetch(server, "sized", low)
        assert (answer.error_code, answer.log_start_offset) == (ErrorCode.none, low)
        server.wait_for_event("data_plane.retention.deleted")
        assert watermarks(server, "kept") == (0, 200)  # default retention: 7 days, no size limit
        assert len(segment_bases(str(tmp_path), "kept")) > 10
    finally:
        server.stop()


def test_retention_ms_deletes_segments_whose_records_are_old(tmp_path):
    server = start_server(str(tmp_path), {"log.retention.check.interval.ms": "100"})
    try:
        create(server, "aged", **{"retention.ms": "1500"})
        produce(server, "aged", 100)
        assert len(segment_bases(str(tmp_path), "aged")) > 3  # (the boundary is unit-tested with a fake clock)
        # idle from here on: the active segment expires too, so the log rolls to an empty segment at the
        # log end offset and deletes all the old ones (Kafka's UnifiedLog.deleteSegments)
        wait_until(lambda: segment_bases(str(tmp_path), "aged") == [100])
        assert watermarks(server, "aged") == (100, 100)  # ListOffsets: earliest == latest
        assert raw_fetch(server, "aged", 99).error_code == ErrorCode.offset_out_of_range
        server.wait_for_event("storage.segment.rolled", base_offset=100)
        consumer = from_earliest(server, "aged")
        try:
            assert poll_for(consumer, 2.0) == []  # no old data left to read
            later = int(time.time() * 1000) + 600_000  # 10 min ahead: retention.ms keeps it during the test
            produce(server, "aged", 1, timestamp=later)
            assert [msg.offset() for msg in poll_for(consumer, 15.0, stop_after=1)] == [100]
        finally:
            consumer.close()
        assert watermarks(server, "aged") == (100, 101)
    finally:
        server.stop()


def from_earliest(server, topic: str):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "earliest",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    return consumer


def poll_for(consumer, seconds: float, stop_after: int | None = None) -> list:
    """The records ``consumer`` receives within ``seconds`` (or until it has ``stop_after``)."""
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (stop_after is None or len(out) < stop_after):
        msg = consumer.poll(0.2)
        if msg is not None:
            assert msg.error() is None, msg.error()
            out.append(msg)
    return out


def test_delete_records_through_the_admin_client_survives_restart_and_kill(tmp_path):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    server = start_server(str(tmp_path), {"log.retention.check.interval.ms": "600000"})
    try:
        create(server, "t")
        produce(server, "t", 100)
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        result = admin.delete_records([TopicPartition("t", 0, 57)])
        deleted = result[TopicPartition("t", 0)].result(10)
        assert deleted.low_watermark == 57
        wait_until(lambda: segment_bases(str(tmp_path), "t")[0] > 0)  # whole segments below it, at once
        assert watermarks(server, "t") == (57, 100)
        assert raw_fetch(server, "t", 56).error_code == ErrorCode.offset_out_of_range
        too_far = admin.delete_records([TopicPartition("t", 0, 101)])[TopicPartition("t", 0)]
        with pytest.raises(Exception, match="OFFSET_OUT_OF_RANGE|out of range"):
            too_far.result(10)
        server.stop()
        server = start_server(str(tmp_path))
        assert watermarks(server, "t") == (57, 100)
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        assert admin.delete_records([TopicPartition("t", 0, 80)])[TopicPartition("t", 0)].result(10).low_watermark == 80
        server.kill()  # SIGKILL: the answered DeleteRecords must still hold
        server = start_server(str(tmp_path))
        assert watermarks(server, "t") == (80, 100)
        assert raw_fetch(server, "t", 79).error_code == ErrorCode.offset_out_of_range
    finally:
        server.stop()


def consume_all(server, topic: str, expected_end: int) -> list[tuple[int, bytes, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "reader", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes, bytes]] = []
    deadline = time.monotonic() + 30
    try:
        while (not out or out[-1][0] < expected_end - 1) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append((msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def test_compacted_topic_keeps_the_latest_value_per_key_for_a_real_consumer(tmp_path):
    server = start_server(str(tmp_path), {"log.retention.check.interval.ms": "100"})
    try:
        create(server, "compacted", **{"cleanup.policy": "compact"})
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", "batch.size": SEGMENT // 2})
        for i in range(200):
            producer.produce("compacted", b"value-%d" % i + VALUE, key=b"key-%d" % (i % 10))
        assert producer.flush(30) == 0
        server.wait_for_event("storage.log.compacted", timeout=15)
        records = consume_all(server, "compacted", 200)
        assert records[-1][0] == 199 and len(records) < 200
        latest = {key: value for _offset, key, value in records}
        assert latest == {b"key-%d" % k: b"value-%d" % (190 + k) + VALUE for k in range(10)}
        assert watermarks(server, "compacted") == (0, 200)
    finally:
        server.stop()
