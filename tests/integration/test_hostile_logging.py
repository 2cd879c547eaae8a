"""Errors a client causes are WARNING lines without tracebacks, rate-limited; they never flood the log
(issue 13, defect 7)."""

from __future__ import annotations

import datetime
import socket
import struct

import pytest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.static.primitive import i32Timedelta

from coordinator.log_setup import MAX_VALUE_CHARS
from protocol.header import encode_request_header
from tests.support.hostile import Watchdog, closed_by_server, start_limited_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _null_topics_commit() -> bytes:
    """OffsetCommit v8 whose (non-nullable) topics array is null."""
    body = b"\x02g" + struct.pack(">i", -1) + b"\x01" + b"\x00" + b"\x00" + b"\x00"
    return _frame(encode_request_header(8, 8, 1, "hostile", True) + body)


@pytest.fixture
def server(tmp_path):
    process = start_limited_server(str(tmp_path))
    yield process
    assert process.stop() == 0


def test_a_null_array_where_none_is_allowed_closes_the_connection_with_one_warning(server):
    with socket.create_connection((server.host, server.port), timeout=5) as sock:
        sock.sendall(_null_topics_commit())
        assert closed_by_server(sock)
    event = server.wait_for_event("closing connection")
    assert "null array" in event["reason"] and event["level"] == "warning"
    assert "exception" not in event
    assert [e for e in server.events() if e.get("level") in ("error", "critical")] == []


def test_a_flood_of_bad_requests_logs_a_bounded_number_of_warnings(server):
    with Watchdog(server) as watchdog:
        for _ in range(150):
            with socket.create_connection((server.host, server.port), timeout=5) as sock:
                sock.sendall(_null_topics_commit())
                assert closed_by_server(sock)
    watchdog.check()
    server.wait_for_event("connection closed", requests=1)
    warnings = server.events("closing connection")
    assert 1 <= len(warnings) <= 20, len(warnings)  # log_setup.RateLimiter: 20 per event name per 10 s
    assert all("exception" not in e for e in warnings)
    assert [e for e in server.events() if e.get("level") in ("error", "critical")] == []


def test_a_megabyte_group_id_is_not_copied_whole_into_the_log(server):
    """Every line that quotes a client's string quotes at most log_setup.MAX_VALUE_CHARS of it."""
    group = "g" * (1 << 20)
    with WireClient(server.host, server.port) as client:
        for member_id in ("", "unknown-member"):
            client.call(JoinGroupRequest(
                group_id=group, session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
                rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)), member_id=member_id,
                group_instance_id=None, protocol_type="consumer", reason="r" * (1 << 20),
                protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),)))
    server.stop()
    assert max(len(line) for line in server.lines) < 3 * MAX_VALUE_CHARS + 2000
