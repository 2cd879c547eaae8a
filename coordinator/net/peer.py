"""Whether a connection's peer is still there, for a connection that stopped reading (net/connection.py): it
would not see the peer close through a read."""

from __future__ import annotations

import asyncio
import socket

# Linux TCP states (tcp_states.h) of a socket whose peer closed or reset: CLOSE_WAIT, CLOSE
_PEER_GONE_STATES = (8, 7)


def peer_gone(transport: asyncio.BaseTransport) -> bool:
    """Whether the peer closed or reset the connection, seen from the TCP state, which data
    still unread does not hide (Linux; elsewhere False: the idle timeout remains)."""
    sock = transport.get_extra_info("socket")
    if sock is None or not hasattr(socket, "TCP_INFO"):
        return False
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] in _PEER_GONE_STATES
    except (OSError, ValueError):
        return False
