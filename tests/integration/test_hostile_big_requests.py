"""Single requests that used to freeze the event loop (issue 13, defect 4), sent to the real
server under a container-like memory limit: a Metadata request auto-creating 2,000 topics, an
Metadata request naming 400,000 topics, an OffsetCommit of a million partitions, an OffsetFetch
of a million, a Fetch listing one partition 500 times and a Fetch asking for 2 GiB. Each time a
well-behaved client on another connection keeps its answers within RESPONSIVE_SECONDS, the answer
is bounded as Kafka's would be, and acknowledged commits survive."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from storage.batch import build_batch, iter_batches
from tests.support.data_plane import req
from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, start_limited_server
from tests.support.hostile_frames import commit_answer_codes, huge_commit_frame, send_frame
from tests.support.offsets import fetch_request
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

GROUP = "survivor"
KEPT = {("kept", 0): 42, ("kept", 1): 7}
FETCH_MAX_BYTES = 57671680  # Kafka's fetch.max.bytes default, which the server keeps
INT32_MAX = 2**31 - 1


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


@pytest.fixture
def server(tmp_path):
    server = start_limited_server(str(tmp_path))
    try:
        commit_offsets(server, GROUP, KEPT)
        yield server
    finally:
        server.kill()


def rss_bytes(server) -> int:
    with open(f"/proc/{server.process.pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def metadata(names: list[str]):
    return req(ApiKey.METADATA, 12, topics=[{"name": n, "topic_id": None} for n in names],
               allow_auto_topic_creation=True, include_topic_authorized_operations=False,
               include_cluster_authorized_operations=False)


def fetch(listed: list[tuple[str, int]], max_bytes: int, partition_max_bytes: int):
    return req(ApiKey.FETCH, 12, max_wait=ms(0), min_bytes=1, max_bytes=max_bytes, isolation_level=0,
               session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
               topics=[{"topic": t, "partitions": [{"partition": p, "fetch_offset": 0,
                                                    "partition_max_bytes": partition_max_bytes}]}
                       for t, p in listed])


def fill(client: WireClient, topic: str, partitions: int, batches: int, value_bytes: int) -> None:
    created = client.call(req(ApiKey.CREATE_TOPICS, 7, timeout=ms(10_000), validate_only=False, topics=[
        {"name": topic, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}]))
    assert created.topics[0].error_code == ErrorCode.none
    records = build_batch([(None, b"v" * value_bytes, 1_000)])
    for partition in range(partitions):
        for _ in range(batches):
            answer = client.call(req(ApiKey.PRODUCE, 9, acks=-1, timeout=ms(10_000), transactional_id=None,
                                     topic_data=[{"name": topic, "partition_data": [
                                         {"index": partition, "records": records}]}]))
            assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none


def test_a_metadata_request_auto_creating_2000_topics(server):
    names = [f"auto-{i:04d}-{uuid.uuid4().hex[:6]}" for i in range(2000)]
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        first = attacker.call(metadata(names))
        second = attacker.call(metadata(names))
    dog.check()
    assert [(t.name, t.error_code) for t in first.topics] == [(n, ErrorCode.leader_not_available) for n in names]
    assert [(t.name, t.error_code, len(t.partitions)) for t in second.topics] == \
        [(n, ErrorCode.none, 1) for n in names]
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)


def test_a_metadata_request_naming_400000_topics(server):
    names = [f"absent-{i}" for i in range(400_000)]
    request = req(ApiKey.METADATA, 12, topics=[{"name": n, "topic_id": None} for n in names],
                  allow_auto_topic_creation=False, include_topic_authorized_operations=False,
                  include_cluster_authorized_operations=False)
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        response = attacker.call(request)
    dog.check()
    assert len(response.topics) == len(names)
    assert {t.error_code for t in response.topics} == {ErrorCode.unknown_topic_or_partition}
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)


def test_a_delete_topics_request_naming_400000_topics(server):
    names = [f"absent-{i}" for i in range(400_000)]
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        response = attacker.call(req(ApiKey.DELETE_TOPICS, 4, topic_names=names, timeout=ms(10_000)))
    dog.check()
    assert len(response.responses) == len(names)
    assert {r.error_code for r in response.responses} == {ErrorCode.unknown_topic_or_partition}
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)


def test_an_offset_commit_of_a_million_partitions(server):
    before = rss_bytes(server)
    frame = huge_commit_frame(1, GROUP, "kept", 1_000_000, 5)  # would overwrite KEPT if written
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        answer = send_frame(attacker, frame)
    dog.check()
    # Kafka: records past the offsets topic's max.message.bytes -> INVALID_COMMIT_OFFSET_SIZE; the partitions
    # "kept" does not have -> UNKNOWN_TOPIC_OR_PARTITION (Kafka would commit the 2 it has: commit_size.py)
    assert commit_answer_codes(answer) == {ErrorCode.invalid_commit_offset_size: 2,
                                           ErrorCode.unknown_topic_or_partition: 999_998}
    assert rss_bytes(server) - before < 256 << 20, "the server's memory ballooned"
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)


def test_an_offset_fetch_of_a_million_partitions(server):
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        response = attacker.call(fetch_request(8, GROUP, {"kept": list(range(1_000_000))}))
    dog.check()
    (group,) = response.groups
    (topic,) = group.topics
    assert group.error_code == ErrorCode.none and len(topic.partitions) == 1_000_000
    assert [(p.partition_index, p.committed_offset) for p in topic.partitions[:3]] == [(0, 42), (1, 7), (2, -1)]
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)


def test_a_fetch_listing_one_partition_500_times(server):
    with WireClient(server.host, server.port, timeout=60) as client:
        fill(client, "listed", 1, 1, 1_000_000)
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        response = attacker.call(fetch([("listed", 0)] * 500, INT32_MAX, INT32_MAX))
    dog.check()
    # Kafka keys a fetch's partitions in a map: the partition is read (and answered) once
    (topic,) = response.responses
    (part,) = topic.partitions
    assert part.error_code == ErrorCode.none and [b.base_offset for b in iter_batches(part.records)] == [0]
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)


def test_a_fetch_asking_for_2_gib(server):
    with WireClient(server.host, server.port, timeout=60) as client:
        fill(client, "deep", 4, 16, 1_000_000)  # 64 MB, past fetch.max.bytes
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        response = attacker.call(fetch([("deep", p) for p in range(4)], INT32_MAX, INT32_MAX))
    dog.check()
    sizes = [len(p.records or b"") for t in response.responses for p in t.partitions]
    assert all(p.error_code == ErrorCode.none for t in response.responses for p in t.partitions)
    assert FETCH_MAX_BYTES - 1_100_000 < sum(sizes) <= FETCH_MAX_BYTES, sizes
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)
