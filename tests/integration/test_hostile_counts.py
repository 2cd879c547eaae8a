"""Array-count bombs (issue 13, defect 1) against the real server under a 3 GiB RLIMIT_AS.

A 20-byte Metadata v12 (compact count 2^32-1) made kio's native reader ask for 34 GB and abort
the process; a legacy int32 count of 2^31-1 asks for 17 GB. Now each such request closes only its
own connection (Kafka closes a connection whose request does not parse), with a WARN line, while a
well-behaved client keeps getting answers and acknowledged commits stay.
"""

from __future__ import annotations

import socket
import struct

import pytest

from protocol.apis import ApiKey
from protocol.framing import frame
from protocol.header import encode_request_header
from tests.support.hostile import (
    Watchdog,
    assert_commits_survive,
    closed_by_server,
    commit_offsets,
    start_limited_server,
)

pytestmark = pytest.mark.integration

COMMITTED = {("survivor", 0): 42, ("survivor", 1): 7}


def _legacy(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def _request(key: ApiKey, version: int, flexible: bool, body: bytes) -> bytes:
    return frame(encode_request_header(int(key), version, 7, None, flexible) + body)


BOMBS = {
    # the reproduction: Metadata v12, null client id, empty tags, topics count 2^32-1
    "metadata v12 compact 2^32-1": frame(struct.pack(">hhih", 3, 12, 1, -1) + b"\x00" + b"\xff\xff\xff\xff\x0f"),
    "metadata v4 legacy 2^31-1": _request(ApiKey.METADATA, 4, False, struct.pack(">i", 2**31 - 1)),
    # the OffsetCommit fast path decodes first, then hands the frame to the generic path
    "offset_commit v9 nested compact 2^35-2": _request(
        ApiKey.OFFSET_COMMIT, 9, True,
        b"\x02g" + struct.pack(">i", -1) + b"\x01\x00" + b"\x02" + b"\x02t" + b"\xff\xff\xff\xff\x7f"),
    "offset_commit v7 nested legacy 2^31-1": _request(
        ApiKey.OFFSET_COMMIT, 7, False,
        _legacy("g") + struct.pack(">i", -1) + _legacy("") + b"\xff\xff" + struct.pack(">i", 1) + _legacy("t")
        + struct.pack(">i", 2**31 - 1)),
    "offset_fetch v8 nullable nested compact 2^32-1": _request(
        ApiKey.OFFSET_FETCH, 8, True, b"\x02" + b"\x02g" + b"\xff\xff\xff\xff\x0f"),
    "fetch v4 legacy int32 partitions 2^31-1": _request(
        ApiKey.FETCH, 4, False,
        struct.pack(">iiiib", -1, 500, 1, 1 << 20, 0) + struct.pack(">i", 1) + _legacy("t")
        + struct.pack(">i", 2**31 - 1)),
}


def test_count_bombs_close_only_their_own_connection(tmp_path):
    server = start_limited_server(str(tmp_path / "data"))
    try:
        commit_offsets(server, "hostile-counts", COMMITTED)
        with Watchdog(server) as watchdog:
            for name, payload in BOMBS.items():
                with socket.create_connection((server.host, server.port), timeout=5) as bad:
                    bad.sendall(payload)
                    assert closed_by_server(bad), name
                assert server.process.poll() is None, f"{name} stopped the server: {server.lines[-5:]}"
            watchdog.check()
        assert_commits_survive(server, "hostile-counts", COMMITTED)
        refusals = server.wait_for_events("closing connection", len(BOMBS), where=lambda e: "CountError" in e["reason"])
        assert len(refusals) == len(BOMBS), [e["reason"] for e in server.events("closing connection")]
        assert not [e for e in server.events() if e.get("level") in ("error", "critical")]
    finally:
        code = server.stop()
    assert code == 0, server.lines[-10:]
