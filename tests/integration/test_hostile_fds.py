"""Fd exhaustion (issue 13, defect 3): a client that creates many partitions, holds more connections
than the fd limit allows and then writes to every partition at once must not stop the server, delay
another client, lose acknowledged commits, or leave an offsets partition broken until a restart."""

from __future__ import annotations

import contextlib
import socket

import pytest
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from tests.support.data_plane import batch, ms, req
from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, open_fds, start_limited_server
from tests.support.offsets import commit_request
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

NOFILE = 400  # the server's RLIMIT_NOFILE; it holds ~65 fds when idle (50 offsets partitions)
# A partition used to hold 3 fds: 1,000 partitions need far more than NOFILE. Created 50 at a time:
# creating a topic opens its logs on the event loop (issue 13 defect 4), ~0.1 s per 50 partitions.
TOPICS, PARTITIONS = 20, 50
SETTINGS = {"offsets.topic.segment.bytes": "2000"}  # an offsets segment rolls every few commits
BEFORE = {("orders", p): 100 + p for p in range(3)}


def create_topic(client: WireClient, name: str, partitions: int) -> int:
    response = client.call(req(ApiKey.CREATE_TOPICS, 7, timeout=ms(30_000), validate_only=False, topics=[
        {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}]))
    return response.topics[0].error_code


def produce_everywhere(client: WireClient, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """One Produce with a batch for each of `partitions`: every log needs its write fd at once."""
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    response = client.call(req(ApiKey.PRODUCE, 9, acks=-1, timeout=ms(30_000), transactional_id=None, topic_data=[
        {"name": topic, "partition_data": [{"index": p, "records": batch(b"v%d" % p)} for p in indexes]}
        for topic, indexes in topics.items()]))
    return {(t.name, p.index): p.error_code for t in response.responses for p in t.partition_responses}


def commit_pipelined(client: WireClient, group: str, rounds: int) -> list[ErrorCode]:
    """`rounds` OffsetCommits sent at once (their offsets segment rolls several times), answers in order."""
    requests = [commit_request(8, group, {("orders", 0): i}) for i in range(rounds)]
    ids = [client.send(r) for r in requests]
    codes = []
    for request, correlation_id in zip(requests, ids):
        response = client.receive(request, correlation_id)
        codes += [p.error_code for t in response.topics for p in t.partitions]
    return codes


def flood(server, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        try:
            sockets.append(socket.create_connection((server.host, server.port), timeout=5))
        except OSError:
            break
    return sockets


def test_fd_exhaustion_leaves_the_server_answering_and_every_partition_writable(tmp_path):
    server = start_limited_server(str(tmp_path), SETTINGS, nofile=NOFILE)
    try:
        with Watchdog(server) as watchdog, contextlib.ExitStack() as stack:
            commit_offsets(server, "victim", BEFORE)
            client = stack.enter_context(WireClient(server.host, server.port, timeout=60))  # before the flood
            for t in range(TOPICS):
                assert create_topic(client, f"wide-{t}", PARTITIONS) == ErrorCode.none
            sockets = flood(server, NOFILE)  # more connections than fds
            stack.callback(lambda: [s.close() for s in sockets])
            assert len(sockets) >= NOFILE // 4
            assert open_fds(server.process.pid) < NOFILE  # connections are capped below the fd limit

            everything = [(f"wide-{t}", p) for t in range(TOPICS) for p in range(PARTITIONS)]
            produced = produce_everywhere(client, everything)  # 1,000 write fds at once
            assert set(produced.values()) <= {ErrorCode.none, ErrorCode.kafka_storage_error}, produced
            assert ErrorCode.kafka_storage_error in produced.values()  # the fds really ran out
            during = commit_pipelined(client, "busy", 30)
            assert set(during) <= {ErrorCode.none, ErrorCode.not_coordinator}, during  # retriable only

            failed = [p for p, code in produced.items() if code != ErrorCode.none]
            for i in range(0, len(failed), 25):  # each of them is writable again, a few at a time
                assert set(produce_everywhere(client, failed[i:i + 25]).values()) == {ErrorCode.none}
            assert set(commit_pipelined(client, "busy", 30)) == {ErrorCode.none}  # rolls work again

            for s in sockets:  # the pressure goes away
                s.close()
            sockets.clear()
            server.wait_for_event("connection closed")
            commit_offsets(server, "after", {("orders", 0): 7})  # a new connection is accepted again
        watchdog.check()
        assert server.process.poll() is None
        assert_commits_survive(server, "victim", BEFORE)
        assert_commits_survive(server, "busy", {("orders", 0): 29})
        assert_commits_survive(server, "after", {("orders", 0): 7})
    finally:
        server.stop()
