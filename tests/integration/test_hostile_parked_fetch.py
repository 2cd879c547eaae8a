"""Red team a11 (issue 13 follow-up): Fetches parked for 24.8 days (max_wait and min_bytes at 2^31-1)
by a client that then closes its connection. Each cycle parks 500 Fetches of a 1,000-partition
topic (reading paused at queued.max.requests) and closes; before the fix each cycle kept ~75 MB
for good, so a server under a 1.5 GiB address-space limit ran out of memory within 16 cycles. Then
a DeleteTopics of the topic, which used to wake every parked fetch at once."""

from __future__ import annotations

import datetime
import socket
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from tests.support.data_plane import req
from tests.support.hostile import Watchdog, assert_commits_survive, commit_offsets, start_limited_server
from tests.support.wire_client import WireClient, request_frame

pytestmark = pytest.mark.integration

GROUP = "survivor"
KEPT = {("kept", 0): 42, ("kept", 1): 7}
PARTITIONS = 1000
FETCHES = 500  # queued.max.requests: the connection stops reading with all of them parked
CYCLES = 16
MEMORY = 3 << 29  # 1.5 GiB; each leaked cycle held ~75 MB; the server idles at ~0.5 GB of address space
INT32_MAX = 2**31 - 1
SEND_SLICE = 20  # frames per send: the attack paced so that it measures the leak, not the read burst


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def parked_fetch(correlation_id: int) -> bytes:
    request = req(ApiKey.FETCH, 12, replica_id=-1, max_wait=ms(INT32_MAX), min_bytes=INT32_MAX, max_bytes=1 << 20,
                  isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                  topics=[{"topic": "wide", "partitions": [
                      {"partition": p, "fetch_offset": 0, "current_leader_epoch": -1, "last_fetched_epoch": -1,
                       "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p in range(PARTITIONS)]}])
    return request_frame(request, correlation_id)


def park_and_leave(server, frames: list[bytes]) -> None:
    with socket.create_connection((server.host, server.port)) as sock:
        for start in range(0, len(frames), SEND_SLICE):
            sock.sendall(b"".join(frames[start:start + SEND_SLICE]))
            time.sleep(0.05)
        time.sleep(0.3)


def create_wide(server) -> None:
    with WireClient(server.host, server.port, timeout=30) as client:
        created = client.call(req(ApiKey.CREATE_TOPICS, 7, timeout=ms(30_000), validate_only=False, topics=[
            {"name": "wide", "num_partitions": PARTITIONS, "replication_factor": 1, "assignments": [],
             "configs": []}]))
    assert created.topics[0].error_code == ErrorCode.none


def delete_wide(server) -> None:
    with WireClient(server.host, server.port, timeout=60) as client:
        deleted = client.call(req(ApiKey.DELETE_TOPICS, 6, timeout=ms(60_000),
                                  topics=[{"name": "wide", "topic_id": uuid.UUID(int=0)}]))
    assert deleted.responses[0].error_code == ErrorCode.none


def test_fetches_parked_by_closed_connections_are_released(tmp_path):
    server = start_limited_server(str(tmp_path), memory=MEMORY)
    try:
        commit_offsets(server, GROUP, KEPT)
        create_wide(server)
        frames = [parked_fetch(i) for i in range(FETCHES)]
        with Watchdog(server) as dog:
            for _ in range(CYCLES):
                park_and_leave(server, frames)
                assert server.process.poll() is None
            server.wait_for_event("connection closed", timeout=10.0,
                                  reason="peer closed while reading was paused")
            delete_wide(server)
            time.sleep(1.0)
        dog.check()
        assert server.process.poll() is None
        assert_commits_survive(server, GROUP, KEPT)
        errors = [e for e in server.events() if e.get("level") in ("error", "critical")]
        assert not errors, str(errors[:1])[:3000]
    finally:
        server.kill()


def test_deleting_a_topic_wakes_thousands_of_parked_fetches_in_slices(tmp_path):
    """Four open connections park 2,000 Fetches of 1,000 partitions each; DeleteTopics wakes them all
    (each reads, builds and encodes 1,000 partition errors). Before the wake slices this held the
    event loop for over 2 s."""
    server = start_limited_server(str(tmp_path))
    try:
        commit_offsets(server, GROUP, KEPT)
        create_wide(server)
        frames = [parked_fetch(i) for i in range(FETCHES)]
        socks = [socket.create_connection((server.host, server.port)) for _ in range(4)]
        try:
            with Watchdog(server) as dog:
                for sock in socks:
                    for start in range(0, len(frames), SEND_SLICE):
                        sock.sendall(b"".join(frames[start:start + SEND_SLICE]))
                time.sleep(1.0)
                delete_wide(server)
                time.sleep(1.0)
            dog.check()
        finally:
            for sock in socks:
                sock.close()
        assert server.process.poll() is None
        assert_commits_survive(server, GROUP, KEPT)
    finally:
        server.kill()
