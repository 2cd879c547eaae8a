"""Hypothesis-driven fuzzing of the real server: garbage connections interleaved with a
well-behaved client, which must keep getting correct answers throughout."""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.metadata.v4.request import MetadataRequest

from protocol.apis import API_TABLE
from protocol.framing import frame
from protocol.header import encode_request_header
from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

KNOWN_KEYS = sorted(API_TABLE)


@pytest.fixture(scope="module")
def fuzzed_server(tmp_path_factory):
    process = start_server(str(tmp_path_factory.mktemp("fuzz")))
    yield process
    assert process.stop() == 0


def _header(key: int, version: int) -> bytes:
    spec = API_TABLE.get(key)
    flexible = spec.request_is_flexible(version) if spec else False
    return encode_request_header(key, version, 1, "fuzz", flexible)


garbage = st.one_of(
    st.binary(min_size=1, max_size=300),                                           # noise
    st.integers(-(2**31), -1).map(lambda n: struct.pack(">i", n)),                  # negative size
    st.integers(100 * 1024 * 1024 + 1, 2**31 - 1).map(lambda n: struct.pack(">i", n)),  # oversized
    st.tuples(st.integers(-(2**15), 2**15 - 1).filter(lambda k: k not in API_TABLE),
              st.integers(0, 20)).map(lambda kv: frame(_header(*kv))),              # unknown api key
    st.tuples(st.sampled_from(KNOWN_KEYS), st.integers(-(2**15), 2**15 - 1)).filter(
        lambda kv: not API_TABLE[kv[0]].supports(kv[1])).map(lambda kv: frame(_header(*kv))),  # bad version
    st.tuples(st.sampled_from(KNOWN_KEYS), st.data()).map(
        lambda kd: (kd[0], kd[1].draw(st.integers(API_TABLE[kd[0]].min_version, API_TABLE[kd[0]].max_version)),
                    kd[1].draw(st.binary(max_size=120)))
    ).map(lambda kvb: frame(_header(kvb[0], kvb[1]) + kvb[2])),                     # garbage body
    st.tuples(st.binary(min_size=1, max_size=60), st.integers(1, 59)).map(
        lambda bt: frame(bt[0])[: 4 + bt[1] % len(bt[0])]),                          # truncated frame
    st.binary(min_size=8, max_size=8).map(lambda b: struct.pack(">i", 8) + b),       # header fields only
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(garbage, st.booleans()), min_size=1, max_size=4))
def test_garbage_never_harms_a_good_client(fuzzed_server, steps):
    server = fuzzed_server
    with WireClient(server.host, server.port) as good:
        bad_sockets = []
        try:
            for payload, half_close in steps:
                bad = socket.create_connection((server.host, server.port), timeout=5)
                bad_sockets.append(bad)
                try:
                    bad.sendall(payload)
                    if half_close:
                        bad.shutdown(socket.SHUT_WR)
                except OSError:
                    pass  # the server may already have closed it: that is allowed
                response = good.call(FindCoordinatorRequest(key_type=0, coordinator_keys=("g", "h")))
                assert [(c.key, c.error_code, c.port) for c in response.coordinators] == [
                    ("g", ErrorCode.none, server.port), ("h", ErrorCode.none, server.port)]
                metadata = good.call(MetadataRequest(topics=None, allow_auto_topic_creation=False))
                assert metadata.topics[0].name == "__consumer_offsets"
        finally:
            for bad in bad_sockets:
                bad.close()
    assert server.process.poll() is None


def test_fuzzing_logged_warnings_but_no_errors(fuzzed_server):
    levels = {event.get("level") for event in fuzzed_server.events()}
    assert "error" not in levels and "critical" not in levels
    fuzzed_server.wait_for_event("closing connection")  # at least one violation was logged
    for event in fuzzed_server.events("closing connection"):
        assert event["level"] == "warning" and event["peer"].startswith("127.0.0.1:") and event["reason"]
