"""Request memory across connections (issue 30): 30 connections each sending a 100 MB frame (socket.request.max.bytes)
and stopping one byte short took the server past 2.4 GB and into MemoryErrors under a 3 GiB RLIMIT_AS, and a
well-behaved client waited 2.4 s: the per-connection limits add up. queued.max.request.bytes (default 512 MiB) now
bounds what all connections hold; the connections that need more stop reading until memory is given back, while a
client holding little is still read and answered."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
import urllib.request

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from prometheus_client.parser import text_string_to_metric_families

from tests.support.hostile import Watchdog, closed_by_server, start_limited_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

ATTACKERS = 30
FRAME = 104857600  # socket.request.max.bytes' default
POOL = 536870912  # queued.max.request.bytes' default
MARGIN = 64 << 20  # per connection, one read and the 64 KiB allowance; the interpreter's own growth
CHUNK = b"\0" * (1 << 20)


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def request_memory(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    (family,) = [f for f in text_string_to_metric_families(text) if f.name == "kcoord_request_memory_bytes"]
    return family.samples[0].value


def send_all_but_one_byte(sock: socket.socket) -> None:
    """A whole frame's size, then its body but the last byte; stops when the server stops reading."""
    try:
        sock.sendall(struct.pack(">i", FRAME))
        left = FRAME - 1
        while left:
            part = CHUNK if left >= len(CHUNK) else CHUNK[:left]
            sock.sendall(part)
            left -= len(part)
    except OSError:  # the timeout: the server no longer reads this connection
        pass


def test_connections_together_hold_at_most_the_request_memory_pool(tmp_path):
    server = start_limited_server(str(tmp_path), {"http.listener": "http://127.0.0.1:0"})
    try:
        pid = server.process.pid
        http = server.wait_for_event("http listening")["port"]
        idle = rss(pid)
        with Watchdog(server) as watchdog, contextlib.ExitStack() as stack:
            sockets = [socket.create_connection((server.host, server.port), timeout=3, source_address=("127.0.0.2", 0))
                       for _ in range(ATTACKERS)]
            stack.callback(lambda: [s.close() for s in sockets])
            senders = [threading.Thread(target=send_all_but_one_byte, args=(s,)) for s in sockets]
            for sender in senders:
                sender.start()
            peak = idle
            while any(sender.is_alive() for sender in senders):
                peak = max(peak, rss(pid))
                time.sleep(0.1)
            peak = max(peak, rss(pid))
            assert peak - idle <= POOL + FRAME + MARGIN, f"{(peak - idle) >> 20} MiB held for requests"
            assert request_memory(http) >= POOL  # used up: the attackers wait
            server.wait_for_event("request memory exhausted")
            with WireClient(server.host, server.port, timeout=5) as client:  # a new client is read and answered
                answer = client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
            assert answer.error_code == ErrorCode.none
            for sock in sockets:
                sock.settimeout(0.01)
                with pytest.raises(TimeoutError):  # paused, not closed
                    closed_by_server(sock)
            watchdog.check()
        deadline = time.monotonic() + 10
        while request_memory(http) and time.monotonic() < deadline:  # the closed connections gave it all back
            time.sleep(0.05)
        assert request_memory(http) == 0
        assert server.process.poll() is None
        assert not [e for e in server.events() if e.get("level") in ("error", "critical")]
        assert not [line for line in server.lines if "MemoryError" in line]
    finally:
        server.kill()
