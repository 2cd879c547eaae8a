"""Issue 13 follow-up (red team a11): a connection that stopped reading still notices that its
peer has gone (TCP state) and releases the answers parked for it."""

from __future__ import annotations

import asyncio
import socket

import coordinator.net.connection as server_module
from coordinator.net.peer import peer_gone
from tests.support.connection import FakeTransport, connect, settle
from tests.support.data_plane import Plane
from tests.support.wire_client import request_frame

FOREVER_MS = 2**31 - 1


class SocketTransport(FakeTransport):
    """A fake transport over a real accepted TCP socket, for the TCP state."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock

    def get_extra_info(self, name):
        return self.sock if name == "socket" else super().get_extra_info(name)


def tcp_pair() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
    return client, accepted


async def test_peer_gone_sees_a_close_behind_unread_data():
    client, accepted = tcp_pair()
    try:
        assert not peer_gone(SocketTransport(accepted))
        client.sendall(b"unread request bytes")
        client.close()
        await settle(lambda: peer_gone(SocketTransport(accepted)))
    finally:
        accepted.close()


async def test_a_paused_connection_closes_when_its_peer_goes(tmp_path, monkeypatch):
    monkeypatch.setattr(server_module, "PEER_CHECK_SECONDS", 0.01)
    client, accepted = tcp_pair()
    try:
        async with Plane(str(tmp_path), **{"queued.max.requests": "2"}) as plane:
            await plane.create("t")
            connection, _ = connect(plane)
            transport = SocketTransport(accepted)
            connection.transport = transport
            fetch = plane.fetch_request("t", 0, 0, max_wait=FOREVER_MS)
            connection.data_received(b"".join(request_frame(fetch, i) for i in range(2)))
            assert transport.paused and plane.data.purgatory.waiting() == 2
            await asyncio.sleep(0.05)
            assert not transport.closed  # the peer is still there
            client.close()
            await settle(lambda: transport.closed)
            assert connection.close_reason == "peer closed while reading was paused"
            connection.connection_lost(None)  # what the aborted transport calls
            assert plane.data.purgatory.waiting() == 0
    finally:
        accepted.close()

