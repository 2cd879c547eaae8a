"""Stalled TLS handshakes (issue 30): 1,100 TCP connections to an SSL (then a SASL_SSL) listener that never send a
ClientHello took the server from 115 fds to its whole RLIMIT_NOFILE (1,024) although max.connections=100 and
max.connections.per.ip=50, a PLAINTEXT client could not even connect meanwhile and nothing was logged: a connection
was counted only once its handshake was done. Now it is counted at accept, as Kafka does; the ones over a limit are
closed at once with a warning, and a handshake that never finishes is dropped after the idle time (here 5 s)."""

from __future__ import annotations

import contextlib
import socket

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from tests.support.hostile import Watchdog, fds_for_clients, open_fds, start_limited_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

NOFILE = 1024
ATTACKER = "127.0.0.2"  # the stalled connections come from here; the well-behaved clients from 127.0.0.1
STALLED = 1100
PER_IP = 50
IDLE_MS = 5000



def stall(port: int, count: int) -> list[socket.socket]:
    """`count` connections from ATTACKER that send nothing (the server may close those over its limits)."""
    sockets = []
    for _ in range(count):
        try:
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(ATTACKER, 0)))
        except OSError:  # a full backlog: the server is not accepting
            break
    return sockets


def new_client_answers(server) -> bool:
    with WireClient(server.host, server.port, timeout=5) as client:
        answer = client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    return answer.error_code == ErrorCode.none



def test_stalled_tls_handshakes_are_counted_at_accept_and_dropped_after_the_idle_time(tmp_path, certs):
    server = start_limited_server(str(tmp_path), {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.location": str(certs.server), "ssl.truststore.location": str(certs.ca),
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "max.connections": "100", "max.connections.per.ip": str(PER_IP), "connections.max.idle.ms": str(IDLE_MS),
    }, nofile=NOFILE)
    try:
        pid = server.process.pid
        idle_fds = open_fds(pid)
        with Watchdog(server) as watchdog, contextlib.ExitStack() as stack:
            stack.enter_context(fds_for_clients(STALLED))  # this process holds the client ends
            for listener in ("SSL", "SASL_SSL"):
                sockets = stall(server.port_of(listener), STALLED)
                stack.callback(lambda held=sockets: [s.close() for s in held])
                assert len(sockets) == STALLED
                # the stalled handshakes hold at most max.connections.per.ip fds (+ the two clients here)
                assert open_fds(pid) <= idle_fds + PER_IP + 4, (listener, open_fds(pid), idle_fds)
                assert new_client_answers(server), listener  # another address still connects and is answered
                server.wait_for_event("connection refused", where=lambda e: e["peer"] == ATTACKER)
                # the handshakes that never finish are dropped after the idle time, and give their count back
                closed = server.wait_for_events(
                    "connection closed", PER_IP, timeout=IDLE_MS / 1000 + 10,
                    where=lambda e, n=listener: "TLS handshake failed" in e["reason"]
                    and e["peer"].startswith(ATTACKER) and e["listener"] == n)
                assert all("handshake is taking longer than 5.0 seconds" in e["reason"] for e in closed)
            watchdog.check()
        assert server.process.poll() is None
        assert not [e for e in server.events() if e.get("level") in ("error", "critical")]
    finally:
        server.kill()
