"""TLS listeners count a connection at accept (coordinator/net/tls_accept.py): the count is taken before the
handshake, given back when the handshake fails, and a connection over a limit never starts one."""

from __future__ import annotations

import asyncio
import socket

from coordinator.config import Config
from coordinator.net.connection_quotas import ConnectionQuotas
from coordinator.net.tls_accept import TlsAcceptor, listening_sockets


class Made:
    """What the acceptor makes: records the handshake's end."""

    def __init__(self, quotas: ConnectionQuotas, host: str) -> None:
        self.quotas, self.host = quotas, host
        self.conn_id = 1
        self.failed: list[str] = []

    def handshake_failed(self, reason: str) -> None:
        self.failed.append(reason)
        self.quotas.release(self.host)


def acceptor_of(certs, quotas: ConnectionQuotas, handshake_seconds: float
                ) -> tuple[TlsAcceptor, ConnectionQuotas, list[Made]]:
    """An acceptor of an SSL listener counting in `quotas`, and the connections it makes."""
    security = Config.load(overrides={"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(certs.server)},
                           environ={}).security("SSL")
    made: list[Made] = []

    def make(_security, host, _port):
        made.append(Made(quotas, host))
        return made[-1]

    return TlsAcceptor(asyncio.get_running_loop(), quotas, security, make, handshake_seconds), quotas, made


def test_listening_sockets_bind_one_port_and_do_not_block():
    sockets = listening_sockets("127.0.0.1", 0)
    try:
        assert len(sockets) == 1 and sockets[0].getsockname()[1] > 0
        assert sockets[0].getblocking() is False
        with socket.create_connection(sockets[0].getsockname()[:2], timeout=5):
            pass
    finally:
        for sock in sockets:
            sock.close()
    every = listening_sockets("", 0)  # every interface: each address family, on one ephemeral port
    try:
        assert len({sock.getsockname()[1] for sock in every}) == 1
        assert {sock.family for sock in every} >= {socket.AF_INET}
    finally:
        for sock in every:
            sock.close()


async def test_a_connection_is_counted_before_its_handshake_and_given_back_when_it_fails(certs):
    acceptor, quotas, made = acceptor_of(certs, ConnectionQuotas(10, 1, {}), handshake_seconds=0.2)
    pairs = [socket.socketpair() for _ in range(2)]
    try:
        for server_end, _client in pairs:
            server_end.setblocking(False)
            acceptor.accepted(server_end, "10.0.0.1", 5000)
        assert quotas.counts == {"10.0.0.1": 1}  # counted at once; the second was over max.connections.per.ip
        assert len(made) == 1 and len(acceptor.handshakes) == 1
        assert pairs[1][1].recv(1) == b""  # and was closed at once
        await asyncio.wait_for(asyncio.gather(*acceptor.handshakes, return_exceptions=True), 5)  # no ClientHello
        await asyncio.sleep(0)  # the done callback
        assert quotas.counts == {} and quotas.total == 0
        (reason,) = made[0].failed
        assert reason.startswith("TLS handshake failed") and "0.2 seconds" in reason
    finally:
        await acceptor.stop()
        for server_end, client in pairs:
            server_end.close()
            client.close()


async def test_stopping_drops_the_handshakes_not_yet_begun_and_gives_their_count_back(certs):
    acceptor, quotas, made = acceptor_of(certs, ConnectionQuotas(10, 10, {}), handshake_seconds=30)
    server_end, client = socket.socketpair()
    try:
        acceptor.accepted(server_end, "10.0.0.1", 5000)
        assert quotas.total == 1
        await acceptor.stop()  # before the handshake's task has run at all
        assert quotas.total == 0 and made[0].failed == ["server stopping"]
        assert server_end.fileno() == -1 and client.recv(1) == b""  # the socket was closed
    finally:
        server_end.close()
        client.close()
