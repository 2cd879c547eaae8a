"""One 1.3 KB CreateTopics asking for 50 topics of 1,000 partitions (red team a05) is refused whole
with POLICY_VIOLATION, as Kafka's controller refuses any operation over 10,000 records: nothing is
created, so no 29 s of work and no 42 s restart. The server stays up, answers a well-behaved
client throughout and keeps its commits."""

from __future__ import annotations

import os

import pytest
from kio.schema.errors import ErrorCode

from coordinator.data_plane.record_budget import EXCESSIVE_BATCH
from protocol.apis import ApiKey
from tests.support.data_plane import ms, req
from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, start_limited_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

COMMITTED = {("t", 0): 42, ("t", 1): 7}


def create(names, partitions):
    return req(ApiKey.CREATE_TOPICS, 7, timeout=ms(60_000), validate_only=False, topics=[
        {"name": name, "num_partitions": partitions, "replication_factor": -1, "assignments": [], "configs": []}
        for name in names])


def test_a_create_topics_of_50000_partitions_is_refused_whole(tmp_path):
    server = start_limited_server(str(tmp_path))
    try:
        commit_offsets(server, "victim", COMMITTED)
        names = [f"bulk{i}" for i in range(50)]
        with Watchdog(server) as watchdog, WireClient(server.host, server.port, timeout=60) as client:
            response = client.call(create(names, 1000))
            assert [(t.name, t.error_code, t.error_message) for t in response.topics] == \
                [(name, ErrorCode.policy_violation, EXCESSIVE_BATCH) for name in names]
            assert client.call(create(["bulk0"], 1000)).topics[0].error_code == ErrorCode.none  # within the bound
        watchdog.check()
        assert sorted(n for n in os.listdir(tmp_path) if n.startswith("bulk")) == \
            sorted(f"bulk0-{p}" for p in range(1000))
        assert_commits_survive(server, "victim", COMMITTED)
    finally:
        server.kill()
