"""DeleteTopics + CreateTopics of a 249-character name pipelined on one connection (red team a07):
the delete's `-delete` directory name is cut to 255 bytes as Kafka's, so the rename succeeds and
the removal cannot take the re-created topic's directory. The acks=-1 records written to the new
topic are there after a restart; the server stays up, answers a well-behaved client, keeps its
commits."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.data_plane.topic_catalog import MAX_NAME_LENGTH
from protocol.apis import ApiKey
from tests.support.data_plane import batch, ms, req
from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, start_limited_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

NAME = "x" * MAX_NAME_LENGTH
COMMITTED = {("t", 0): 42, ("t", 1): 7}


def create():
    return req(ApiKey.CREATE_TOPICS, 7, timeout=ms(10_000), validate_only=False, topics=[
        {"name": NAME, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}])


def produce(value: bytes):
    return req(ApiKey.PRODUCE, 9, acks=-1, timeout=ms(10_000), transactional_id=None,
               topic_data=[{"name": NAME, "partition_data": [{"index": 0, "records": batch(value)}]}])


def fetched_values(client: WireClient) -> tuple[ErrorCode, int, bytes]:
    response = client.call(req(ApiKey.FETCH, 12, max_wait=ms(0), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                               topics=[{"topic": NAME, "partitions": [
                                   {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]))
    part = response.responses[0].partitions[0]
    return part.error_code, part.high_watermark, bytes(part.records or b"")


def test_pipelined_delete_and_recreate_of_a_long_topic_keeps_acknowledged_records(tmp_path):
    server = start_limited_server(str(tmp_path))
    try:
        commit_offsets(server, "victim", COMMITTED)
        with Watchdog(server) as watchdog, WireClient(server.host, server.port, timeout=20) as client:
            assert client.call(create()).topics[0].error_code == ErrorCode.none
            assert client.call(produce(b"old")).responses[0].partition_responses[0].error_code == ErrorCode.none
            delete = req(ApiKey.DELETE_TOPICS, 6, timeout=ms(10_000),
                         topics=[{"name": NAME, "topic_id": uuid.UUID(int=0)}])
            sent = [(delete, client.send(delete)), (create(), client.send(create()))]  # before reading any answer
            deleted, created = [client.receive(request, cid) for request, cid in sent]
            assert deleted.responses[0].error_code == ErrorCode.none
            assert created.topics[0].error_code == ErrorCode.none
            for i in range(5):
                acked = client.call(produce(b"new%d" % i)).responses[0].partition_responses[0]
                assert (acked.error_code, acked.base_offset) == (ErrorCode.none, i)
        watchdog.check()
        assert not server.events("data_plane.topic.rename_failed")
        assert_commits_survive(server, "victim", COMMITTED)
    finally:
        server.kill()
    again = start_limited_server(str(tmp_path))
    try:
        with WireClient(again.host, again.port, timeout=20) as client:
            code, high_watermark, records = fetched_values(client)
        assert (code, high_watermark) == (ErrorCode.none, 5)
        assert b"new0" in records and b"new4" in records and b"old" not in records
        assert_commits_survive(again, "victim", COMMITTED)
    finally:
        again.kill()
