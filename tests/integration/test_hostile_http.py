"""The operations endpoint under a flood (issue 30): 1,000 half-sent `GET /metrics` requests took the server from 115
fds to its RLIMIT_NOFILE (1,024), a Kafka client could not connect, and 909 of them were still open 60 s later (aiohttp
keeps a connection that never finishes its request for an hour). Now the http.listener holds at most
http.max.connections (and max.connections.per.ip from one address), out of the fds the Kafka listeners use, and drops
a request that is not whole after http.connections.max.idle.ms."""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.request

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from tests.support.hostile import Watchdog, fds_for_clients, open_fds, start_limited_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

NOFILE = 1024
ATTACKER = "127.0.0.2"
FLOOD = 1000
HTTP_MAX, PER_IP, IDLE_MS = 64, 50, 3000



def half_sent(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(ATTACKER, 0))
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: coordinator\r\n")  # never the blank line
        except OSError:
            break
        sockets.append(sock)
    return sockets


def closed_by_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True



def test_half_sent_http_requests_are_bounded_in_number_and_time(tmp_path):
    server = start_limited_server(str(tmp_path), {
        "http.listener": "http://127.0.0.1:0", "http.max.connections": str(HTTP_MAX),
        "max.connections.per.ip": str(PER_IP), "http.connections.max.idle.ms": str(IDLE_MS),
    }, nofile=NOFILE)
    try:
        pid = server.process.pid
        port = server.wait_for_event("http listening")["port"]
        idle_fds = open_fds(pid)
        with Watchdog(server) as watchdog, contextlib.ExitStack() as stack:
            stack.enter_context(fds_for_clients(FLOOD))  # this process holds the client ends
            sockets = half_sent(port, FLOOD)
            stack.callback(lambda: [s.close() for s in sockets])
            flooded = time.monotonic()
            assert len(sockets) == FLOOD
            assert open_fds(pid) <= idle_fds + PER_IP + 4, (open_fds(pid), idle_fds)
            with WireClient(server.host, server.port, timeout=5) as client:  # a Kafka client connects
                answer = client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
            assert answer.error_code == ErrorCode.none
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/live", timeout=5) as probe:
                assert probe.status == 200  # another address still reaches the endpoint
            refused = server.wait_for_event("connection refused", listener="http")
            assert refused["peer"] == ATTACKER and "max.connections.per.ip" in refused["reason"]
            time.sleep(max(0.0, flooded + IDLE_MS / 1000 + 2 - time.monotonic()))
            still_open = [s for s in sockets if not closed_by_server(s)]
            assert still_open == [], f"{len(still_open)} half-sent requests still open after the idle time"
            assert open_fds(pid) <= idle_fds + 4
            watchdog.check()
        assert server.process.poll() is None
        assert not [e for e in server.events() if e.get("level") in ("error", "critical")]
    finally:
        server.kill()
