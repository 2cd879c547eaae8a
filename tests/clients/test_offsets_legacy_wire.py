"""OffsetCommit v0/v1 and OffsetFetch v0 against the real server process: ApiVersions, what
the log holds (dump-log), a restart on the same log.dirs, a real group, and kafka-python
told to speak to an 0.8.1 / 0.8.2 broker."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from rules.placement import partition_for
from tests.support.legacy_offsets import commit_v0, commit_v1, fetch_v0
from tests.support.offsets import codes, commit_request, fetch_request, fetched, wait_loaded
from tests.support.server_process import ROOT, start_server
from tests.support.wire_client import WireClient
from tests.support.wire_members import Member, join_and_sync_all

E = ErrorCode
STAMP = 1_600_000_000_000
TOPICS = {"t": 4}  # what the tests commit to (a commit to a topic the server does not know is refused)


@pytest.fixture
def server(tmp_path):
    """The shared fixture's server, knowing TOPICS."""
    process = start_server(str(tmp_path / "data"), topics=TOPICS)
    yield process
    assert process.stop() == 0, process.lines[-10:]


def dump_commits(log_dir: str, group: str) -> list[dict]:
    path = f"{log_dir}/__consumer_offsets-{partition_for(group, 50)}"
    out = subprocess.run([sys.executable, "-m", "coordinator", "dump-log", path, "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [r for r in map(json.loads, out.stdout.splitlines()) if r["type"] == "offset_commit"]


def test_api_versions_advertises_offset_commit_and_fetch_from_v0(server):
    with WireClient(server.host, server.port) as client:
        response = client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    listed = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert listed[ApiKey.OFFSET_COMMIT] == (0, 9) and listed[ApiKey.OFFSET_FETCH] == (0, 9)


def test_v0_v1_commits_are_durable_fetched_by_all_versions_and_keep_v1_timestamps(tmp_path):
    data = str(tmp_path / "data")
    group = "legacy-group"
    server = start_server(data, topics=TOPICS)
    try:
        with WireClient(server.host, server.port) as client:
            wait_loaded(client, group)
            before = int(time.time() * 1000)
            assert set(codes(client.call(commit_v0(group, {("t", 0): 10}, metadata="zero"))).values()) == {E.none}
            response = client.call(commit_v1(group, {("t", 1): (11, STAMP), ("t", 2): 12}, metadata="one"))
            after = int(time.time() * 1000)
            assert set(codes(response).values()) == {E.none}
            expected = {("t", 0): (10, "zero"), ("t", 1): (11, "one"), ("t", 2): (12, "one"), ("t", 3): (-1, "")}
            for request, topics in [(fetch_v0(group, {"t": [0, 1, 2, 3]}), None),
                                    (fetch_request(1, group, {"t": [0, 1, 2, 3]}), None),
                                    (fetch_request(5, group, {"t": [0, 1, 2, 3]}), None),
                                    (fetch_request(8, group, {"t": [0, 1, 2, 3]}), "groups")]:
                got = client.call(request)
                got_topics = got.groups[0].topics if topics else got.topics
                assert {k: (v[0], v[2]) for k, v in fetched(got_topics).items()} == expected, type(request)
    finally:
        assert server.stop() == 0
    commits = {(r["topic"], r["partition"]): r["value"] for r in dump_commits(data, group)}
    assert {k: v["offset"] for k, v in commits.items()} == {("t", 0): 10, ("t", 1): 11, ("t", 2): 12}
    assert commits[("t", 1)]["commit_timestamp"] == STAMP
    assert before <= commits[("t", 0)]["commit_timestamp"] <= after
    assert before <= commits[("t", 2)]["commit_timestamp"] <= after
    assert {v["version"] for v in commits.values()} == {3}  # default retention: no expire timestamp (v1 has one)

    server = start_server(data, topics=TOPICS)  # same log.dirs: loaded back through replay
    try:
        with WireClient(server.host, server.port) as client:
            wait_loaded(client, group)
            got = fetched(client.call(fetch_v0(group, {"t": [0, 1, 2]})).topics)
            assert {k: v[0] for k, v in got.items()} == {("t", 0): 10, ("t", 1): 11, ("t", 2): 12}
    finally:
        assert server.stop() == 0


def test_v1_commit_of_a_real_group_member_is_validated_like_v2(server_factory):
    server = server_factory(overrides={"group.initial.rebalance.delay.ms": "0"}, topics=TOPICS)
    group = "legacy-members"
    member = Member(server, group, ["t"])
    with WireClient(server.host, server.port) as client:
        wait_loaded(client, group)
        try:
            join_and_sync_all([member])
        finally:
            member.close()
        gen, member_id = member.generation, member.member_id
        for kw, expected in [({"generation": gen + 1, "member": member_id}, E.illegal_generation),
                             ({"generation": gen, "member": "stranger"}, E.unknown_member_id),
                             ({}, E.unknown_member_id),
                             ({"generation": gen, "member": member_id}, E.none)]:
            v1 = codes(client.call(commit_v1(group, {("t", 0): 5}, **kw)))
            v2 = codes(client.call(commit_request(2, group, {("t", 0): 5}, **kw)))
            assert v1 == v2 == {("t", 0): expected}, kw
        # v0 is a commit outside group management: refused while the group has members
        assert codes(client.call(commit_v0(group, {("t", 0): 6}))) == {("t", 0): E.unknown_member_id}
        assert fetched(client.call(fetch_v0(group, {"t": [0]})).topics)[("t", 0)][0] == 5


@pytest.mark.parametrize("broker_version, commit_version, fetch_version", [((0, 8, 1), 0, 0), ((0, 8, 2), 1, 1)])
def test_kafka_python_told_of_an_old_broker_commits_and_fetches(server, monkeypatch, broker_version,
                                                                commit_version, fetch_version):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.net.connection import KafkaConnection
    from kafka.structs import OffsetAndMetadata

    sent: list[tuple[int, int]] = []
    original = KafkaConnection._send_request

    def recording(self, request, *args, **kwargs):
        future = original(self, request, *args, **kwargs)
        sent.append((int(request.API_KEY), int(request.API_VERSION)))
        return future

    monkeypatch.setattr(KafkaConnection, "_send_request", recording)
    consumer = KafkaConsumer(bootstrap_servers=f"{server.host}:{server.port}", group_id="kp-old",
                             api_version=broker_version, enable_auto_commit=False, request_timeout_ms=10000)
    try:
        tp = TopicPartition("t", 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(42, "md", -1)})
        assert consumer.committed(tp, metadata=True) == OffsetAndMetadata(42, "md", -1)
    finally:
        consumer.close()
    assert {(k, v) for k, v in sent if k in (ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH)} == {
        (ApiKey.OFFSET_COMMIT, commit_version), (ApiKey.OFFSET_FETCH, fetch_version)}


def test_librdkafka_told_of_an_0_8_2_broker_commits_v1_and_fetches_v1(server):
    import logging

    from confluent_kafka import Consumer, TopicPartition

    class Lines(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.DEBUG)
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(record.getMessage())

    lines = Lines()
    logger = logging.getLogger("test.librdkafka.legacy")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    consumer = Consumer({"bootstrap.servers": f"{server.host}:{server.port}", "group.id": "rd-old",
                         "api.version.request": False, "broker.version.fallback": "0.8.2",
                         "enable.auto.commit": False, "debug": "protocol", "logger": logger})
    try:
        consumer.commit(offsets=[TopicPartition("t", 0, 42)], asynchronous=False)
        [got] = consumer.committed([TopicPartition("t", 0)], timeout=10)
        assert (got.offset, got.error) == (42, None)
    finally:
        consumer.close()
        logger.removeHandler(lines)
    text = "\n".join(lines.lines)
    assert "Received OffsetCommitResponse (v1" in text and "Received OffsetFetchResponse (v1" in text
