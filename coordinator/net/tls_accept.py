"""Accepting on SSL and SASL_SSL listeners: a connection is counted when it is accepted, before its TLS handshake.

asyncio's `create_server(ssl=...)` calls the protocol's `connection_made` only once the handshake is done, and
tells it nothing about a handshake that never finishes: connections counted there let a client that opens sockets
and never sends a ClientHello hold every fd of the process, past `max.connections` and `max.connections.per.ip`
and into the fds kept for the logs. Kafka counts a connection at accept (SocketServer's Acceptor asks
ConnectionQuotas before the channel exists). So do we: a TLS listener's socket is accepted here, the connection
is counted by the server's ConnectionQuotas at once (over a limit: closed at once, with the usual warning), and
its handshake runs over the accepted socket (`loop.connect_accepted_socket`) in a task of its own, bounded by
`handshake_seconds` (the smaller of 30 s and `connections.max.idle.ms`: Kafka closes a connection idle in its
handshake after the idle time). A handshake that fails or times out gives the count back and is logged as a
closed connection with its reason.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from coordinator.net.connection_quotas import ConnectionQuotas
    from coordinator.net.secured import SecuredConnection
    from coordinator.security.listener_config import ListenerSecurity

log = structlog.get_logger("coordinator.net.connection")

#: How long a TLS handshake may take at most; generous for a cold JVM on a busy host.
TLS_HANDSHAKE_SECONDS = 30.0
#: After accept() fails (EMFILE: the process is out of fds), how long to wait before accepting again (asyncio's).
ACCEPT_RETRY_SECONDS = 1.0
BACKLOG = 1024


def listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Non-blocking sockets listening on `host` (empty: every interface) and `port` (0: one ephemeral port, the
    same for every address of the host), as asyncio's create_server binds them."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _name, address in dict.fromkeys(infos):
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:  # as asyncio: a family the system does not have (IPv6 off)
                continue
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # as asyncio: an IPv6 socket does not take IPv4 too
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            try:
                sock.bind(address)
            except OSError as exc:
                if exc.errno != errno.EADDRNOTAVAIL or len(infos) == 1:
                    raise
                sockets.pop().close()  # as asyncio: the family is not enabled
                continue
            sock.listen(BACKLOG)
            sock.setblocking(False)
        if not sockets:
            raise OSError(f"no address of {host or '(every interface)'} to listen on")
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class TlsAcceptor:
    """Accepts on one TLS listener's sockets; `make(security, host, port)` makes the (already counted)
    connection whose `connection_made` the loop calls once the handshake is done."""

    def __init__(self, loop: asyncio.AbstractEventLoop, quotas: ConnectionQuotas, security: ListenerSecurity,
                 make: Callable[[ListenerSecurity, str, int], SecuredConnection], handshake_seconds: float) -> None:
        self.loop = loop
        self.quotas = quotas
        self.security = security
        self.make = make
        self.handshake_seconds = handshake_seconds
        self.sockets: list[socket.socket] = []
        self._accepting: list[asyncio.Task] = []
        self.handshakes: set[asyncio.Task] = set()  # connections in their handshake

    def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen and start accepting; the (host, port) bound by the first socket."""
        self.sockets = listening_sockets(host, port)
        self._accepting = [self.loop.create_task(self._accept(sock)) for sock in self.sockets]
        return self.sockets[0].getsockname()[:2]

    async def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                accepted, address = await self.loop.sock_accept(sock)
            except OSError as exc:  # out of fds (EMFILE, ENFILE) or buffers: wait a little, as asyncio does
                log.warning("accept failed", listener=self.security.name, error=str(exc))
                await asyncio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            self.accepted(accepted, str(address[0]), int(address[1]))

    def accepted(self, sock: socket.socket, host: str, port: int) -> None:
        """Count the new connection (or close it over a limit), then start its handshake."""
        if not self.quotas.admit(host):  # over a limit: closed at once, logged there
            sock.close()
            return
        sock.setblocking(False)
        connection = self.make(self.security, host, port)
        task = self.loop.create_task(self.loop.connect_accepted_socket(
            lambda: connection, sock, ssl=self.security.context, ssl_handshake_timeout=self.handshake_seconds))
        self.handshakes.add(task)
        task.add_done_callback(lambda done: self._handshake_ended(done, connection, sock))

    def _handshake_ended(self, task: asyncio.Task, connection: SecuredConnection, sock: socket.socket) -> None:
        """Done: connection_made has been called, or the handshake failed, timed out or was cancelled (the server
        stops; perhaps before it began): then the socket is closed (a no-op if its transport closed it first, as
        it does) and the count given back."""
        self.handshakes.discard(task)
        if task.cancelled():
            reason = "server stopping"
        else:
            exc = task.exception()
            if exc is None:
                return
            if not isinstance(exc, OSError):  # OSError: ssl.SSLError, a reset, the timeout's ConnectionAbortedError
                log.error("TLS handshake failed", conn=connection.conn_id, exc_info=exc)  # a bug of ours
            reason = f"TLS handshake failed: {exc}"
        sock.close()
        connection.handshake_failed(reason)

    async def stop(self) -> None:
        """Stop accepting and drop the connections still in their handshake."""
        tasks = [*self._accepting, *self.handshakes]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sock in self.sockets:
            sock.close()
