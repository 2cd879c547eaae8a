"""The real server process over TCP: ordering, KIP-511, violations, idle close, signals, restarts."""

from __future__ import annotations

import signal
import struct
import subprocess
import sys
import time

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest as FindCoordinatorV3
from kio.schema.metadata.v12.request import MetadataRequest

from protocol.apis import ApiKey
from protocol.framing import frame
from protocol.header import encode_request_header
from tests.support.server_process import ROOT
from tests.support.wire_client import WireClient, request_frame

API_VERSIONS = ApiVersionsRequest(client_software_name="test", client_software_version="1.0")
METADATA_ALL = MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def find(group: str) -> FindCoordinatorV3:
    return FindCoordinatorV3(key=group, key_type=0)


pytestmark = pytest.mark.integration


def test_pipelined_requests_are_answered_in_order(server):
    requests = [API_VERSIONS, METADATA_ALL, find("g1"), find("")] * 50
    with WireClient(server.host, server.port) as client:
        client.sock.sendall(b"".join(request_frame(r, i) for i, r in enumerate(requests)))
        for i, request in enumerate(requests):
            client.correlation_id = i
            response = client.receive(request, i)
            if request is API_VERSIONS:
                assert response.error_code is ErrorCode.none
            elif request is METADATA_ALL:
                assert response.topics[0].name == "__consumer_offsets"
            else:
                expected = ErrorCode.none if request.key else ErrorCode.invalid_group_id
                assert response.error_code is expected
                if request.key:
                    assert (response.host, response.port) == (server.host, server.port)


def test_kip511_too_new_api_versions_gets_a_v0_answer(server):
    with WireClient(server.host, server.port) as client:
        client.send_raw(frame(encode_request_header(ApiKey.API_VERSIONS, 77, 9, "x", True) + b"\x00"))
        answer = client.read_frame()
        correlation_id, error = struct.unpack_from(">ih", answer, 0)  # header v0, then v0 body
        assert (correlation_id, error) == (9, ErrorCode.unsupported_version.value)
        (count,) = struct.unpack_from(">i", answer, 6)
        assert len(answer) == 10 + 6 * count
        # The connection stays usable: the client retries at a version we support.
        assert client.call(API_VERSIONS).error_code is ErrorCode.none


def _violation(server, payload: bytes, reason: str) -> None:
    with WireClient(server.host, server.port) as bad, WireClient(server.host, server.port) as good:
        bad.send_raw(payload)
        assert bad.is_closed_by_server(), "server kept a connection that broke the protocol"
        warning = server.wait_for_event("closing connection")
        assert reason in warning["reason"] and warning["level"] == "warning"
        port = bad.sock.getsockname()[1]
        assert any(e["peer"].endswith(f":{port}") for e in server.events("closing connection"))
        assert good.call(find("still-served")).error_code is ErrorCode.none


@pytest.mark.parametrize("payload, reason", [
    (struct.pack(">i", -5), "negative frame size"),
    (struct.pack(">i", 2**31 - 1), "exceeds socket.request.max.bytes"),
    (frame(encode_request_header(4242, 0, 1, None, False)), "unknown api key 4242"),
    (frame(encode_request_header(ApiKey.METADATA, 99, 1, None, True)), "unsupported metadata version 99"),
    (frame(b"abc"), "shorter than a request header"),
    (frame(encode_request_header(ApiKey.METADATA, 1, 1, None, False) + b"\xff\x00"), "does not parse"),
    (frame(encode_request_header(ApiKey.METADATA, 9, 1, None, False)), "header does not parse"),
])
def test_protocol_violations_close_only_that_connection(server, payload, reason):
    _violation(server, payload, reason)


def test_idle_connections_are_closed(server_factory):
    server = server_factory(overrides={"connections.max.idle.ms": "300"})
    with WireClient(server.host, server.port) as idle, WireClient(server.host, server.port) as busy:
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:  # keep one connection active past the idle limit
            assert busy.call(API_VERSIONS).error_code is ErrorCode.none
            time.sleep(0.05)
        assert idle.is_closed_by_server(timeout=2)
        assert busy.call(API_VERSIONS).error_code is ErrorCode.none
    closed = server.wait_for_event("connection closed")
    assert "idle for more than 300 ms" in closed["reason"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_stop_gracefully_with_exit_zero(server_factory, sig):
    server = server_factory()
    with WireClient(server.host, server.port) as client:
        assert client.call(API_VERSIONS).error_code is ErrorCode.none
        assert server.stop(sig) == 0
        assert client.is_closed_by_server(timeout=5)
    server.wait_for_event("stopped")


def test_cluster_id_survives_a_restart(server_factory, tmp_path):
    data = str(tmp_path / "persist")
    first = server_factory(log_dir=data)
    with WireClient(first.host, first.port) as client:
        cluster_id = client.call(METADATA_ALL).cluster_id
    assert first.stop() == 0
    second = server_factory(log_dir=data)
    with WireClient(second.host, second.port) as client:
        assert client.call(METADATA_ALL).cluster_id == cluster_id
    assert len(cluster_id) == 22


def test_bad_setting_stops_startup_with_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "coordinator", "serve", "--override", "offsets.topic.num.partitions=zero",
         "--override", f"log.dirs={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: offsets.topic.num.partitions: 'zero' is not an integer"]


def test_a_missing_offsets_snapshot_dir_stops_startup_with_one_line(tmp_path):
    missing = tmp_path / "no-such-snapshots"
    result = subprocess.run(
        [sys.executable, "-m", "coordinator", "serve", "--override", f"log.dirs={tmp_path / 'data'}",
         "--override", f"offsets.snapshot.dir={missing}", "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        f"error: offsets.snapshot.dir: {missing} is not a directory (a bulk_load --output; unset it to use "
        "log.dirs)"]
    assert not (tmp_path / "data").exists()  # refused before anything was written


def test_environment_variables_configure_the_server(server_factory):
    server = server_factory(env={"COORDINATOR_NODE_ID": "7"})
    with WireClient(server.host, server.port) as client:
        response = client.call(METADATA_ALL)
    assert [b.node_id for b in response.brokers] == [7]


def test_back_pressure_keeps_order_when_the_client_does_not_read(server_factory):
    server = server_factory(overrides={"socket.send.buffer.high.bytes": "65536", "queued.max.requests": "4"})
    count = 5000  # ~5.5 MB of Metadata responses: beyond the send-buffer bound and the kernel's buffers
    with WireClient(server.host, server.port, timeout=30) as client:
        client.sock.sendall(b"".join(request_frame(METADATA_ALL, i) for i in range(count)))
        time.sleep(0.5)  # let the server fill its buffer and pause reading
        for i in range(count):
            response = client.receive(METADATA_ALL, i)
            assert len(response.topics[0].partitions) == 50
    assert server.process.poll() is None
