"""Large valid requests no longer stop the event loop (issue 13, docs/SECURITY.md "What is left"):
a 64 MB DescribeGroups of empty group names and a JoinGroup listing 8 million empty protocols,
sent to the real server under a container-like memory limit. kio decoded such a frame in one
call holding the interpreter (and the handlers then worked through millions of entries in one
go); now the frame is decoded CHUNK elements per loop turn (protocol/sliced_decode.py) and the
handler works a slice per turn, so a well-behaved client keeps its answers within
RESPONSIVE_SECONDS and acknowledged commits survive."""

from __future__ import annotations

import struct
import time

import pytest
from kio.schema.errors import ErrorCode

from primitives.uvarint import encode_uvarint as uvarint
from protocol.apis import ApiKey
from protocol.header import encode_request_header
from tests.support.hostile import Watchdog, assert_commits_survive, limited_server_with_commits
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

GROUP = "survivor"
KEPT = {("kept", 0): 42, ("kept", 1): 7}
WATCHED_SECONDS = 15.0  # the decode of the 64 MB frame and the first of its handler's slices


@pytest.fixture
def server(tmp_path):
    with limited_server_with_commits(str(tmp_path), GROUP, KEPT) as server:
        yield server


def framed(api_key: ApiKey, version: int, body: bytes, flexible: bool = True) -> bytes:
    message = encode_request_header(int(api_key), version, 1, "attacker", flexible) + body
    return struct.pack(">i", len(message)) + message


def compact(text: str) -> bytes:
    return uvarint(len(text) + 1) + text.encode()


def test_a_64_mb_describe_groups_of_empty_names(server):
    """v4: 32 million two-byte names. (A compact v5 one of 64 million still has one step of up to
    ~1.5 s here: the making of the 64M-element tuple the request holds, see sliced_decode.py.)"""
    names = 32_000_000
    frame = framed(ApiKey.DESCRIBE_GROUPS, 4, struct.pack(">i", names) + b"\x00\x00" * names + b"\x00", False)
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        attacker.send_raw(frame)
        deadline = time.monotonic() + WATCHED_SECONDS
        while time.monotonic() < deadline and dog.failure is None:
            time.sleep(0.1)
    dog.check()
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)


def test_a_join_group_of_8_million_empty_protocols(server):
    protocols = 8_000_000
    body = (compact("g") + struct.pack(">ii", 10_000, 10_000) + compact("") + b"\x00" + compact("consumer")
            + uvarint(protocols + 1) + b"\x01\x01\x00" * protocols + b"\x00" + b"\x00")
    with Watchdog(server) as dog, WireClient(server.host, server.port, timeout=120) as attacker:
        attacker.send_raw(framed(ApiKey.JOIN_GROUP, 9, body))
        answer = attacker.read_frame()
    dog.check()
    # after the correlation id, tags and throttle
    assert struct.unpack_from(">h", answer, 4 + 1 + 4)[0] == ErrorCode.member_id_required
    assert server.process.poll() is None
    assert_commits_survive(server, GROUP, KEPT)
