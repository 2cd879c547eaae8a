"""Issue 13 follow-up, red team a09/a10/a10b, against the real server in a 3 GiB container: a
Produce request whose batches each make the server walk the most records one batch may hold
(2.4M records from a 1.6 KB zstd batch, or 80,000 one-record xerial chunks in a 1 MB batch),
one per partition or the same partition many times, and such requests pipelined on one
connection. Before, they froze every other client for 3-6 s; now the request's batches share
one budget (the batches past it are INVALID_RECORD) and a connection yields the loop after
15 ms of dispatching, so the well-behaved client is answered within 1.5 s throughout, the
server stays up and the offsets committed before survive."""

from __future__ import annotations

import datetime
import struct

import pytest
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from storage.compression import MAX_DECOMPRESSED_BYTES
from tests.support.bombs import many_smallest_records, many_xerial_chunks
from tests.support.data_plane import req
from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, start_limited_server
from tests.support.wire_client import WireClient, request_frame

pytestmark = pytest.mark.integration

COMMITS = {("orders", 0): 42, ("orders", 1): 7}
TIMEOUT = datetime.timedelta(seconds=60)


def produce(topic: str, batches: list[tuple[int, bytes]]) -> object:
    return req(ApiKey.PRODUCE, 9, acks=1, timeout=TIMEOUT, transactional_id=None,
               topic_data=[{"name": topic, "partition_data": [{"index": p, "records": b} for p, b in batches]}])


def codes(response) -> list[ErrorCode]:
    return [p.error_code for t in response.responses for p in t.partition_responses]


def create_topic(client: WireClient, name: str, partitions: int) -> None:
    response = client.call(req(ApiKey.CREATE_TOPICS, 7, timeout=TIMEOUT, validate_only=False, topics=[
        {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}]))
    assert response.topics[0].error_code == ErrorCode.none


def under_attack(tmp_path, attack) -> None:
    """attack(client) on its own connection while the watchdog asks on another."""
    server = start_limited_server(str(tmp_path))
    try:
        commit_offsets(server, "survivors", COMMITS)
        with WireClient(server.host, server.port, timeout=120) as attacker:
            with Watchdog(server) as watchdog:
                attack(attacker)
            watchdog.check()
        assert server.process.poll() is None, "the server died"
        assert_commits_survive(server, "survivors", COMMITS)
    finally:
        server.stop()


def first_accepted_rest_refused(found: list[ErrorCode], count: int) -> None:
    assert found == [ErrorCode.none] + [ErrorCode.invalid_record] * (count - 1)


def test_one_longest_walk_per_partition(tmp_path):  # a10
    walk = many_smallest_records(MAX_DECOMPRESSED_BYTES)

    def attack(client: WireClient) -> None:
        create_topic(client, "walk", 10)
        first_accepted_rest_refused(codes(client.call(produce("walk", [(p, walk) for p in range(10)]))), 10)

    under_attack(tmp_path, attack)


def test_the_same_partition_listed_twenty_times(tmp_path):  # a10b
    walk = many_smallest_records(MAX_DECOMPRESSED_BYTES)

    def attack(client: WireClient) -> None:
        # Kafka keys a Produce's partitions in a map: the partition is appended (and walked) once
        first_accepted_rest_refused(codes(client.call(produce("rep", [(0, walk)] * 20))), 1)

    under_attack(tmp_path, attack)


def test_many_batches_of_one_record_xerial_chunks(tmp_path):  # a09
    chunks = many_xerial_chunks(1048588)  # message.max.bytes

    def attack(client: WireClient) -> None:
        create_topic(client, "xer", 20)
        first_accepted_rest_refused(codes(client.call(produce("xer", [(p, chunks) for p in range(20)]))), 20)

    under_attack(tmp_path, attack)


def test_longest_walks_pipelined_on_one_connection_are_all_answered_in_order(tmp_path):
    walk = many_smallest_records(MAX_DECOMPRESSED_BYTES)
    records = struct.unpack_from(">i", walk, 57)[0]
    request = produce("piped", [(0, walk)])

    def attack(client: WireClient) -> None:
        create_topic(client, "piped", 1)
        client.send_raw(b"".join(request_frame(request, 100 + i) for i in range(8)))  # ~13 KB: one read
        for i in range(8):  # each its own request: all appended, in the order sent
            response = client.receive(request, 100 + i)
            assert codes(response) == [ErrorCode.none]
            assert response.responses[0].partition_responses[0].base_offset == i * records

    under_attack(tmp_path, attack)
