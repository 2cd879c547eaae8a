"""A connection on an SSL, SASL_PLAINTEXT or SASL_SSL listener (PLAINTEXT ones are plain Connections, so the
hot path pays nothing for security).

On a TLS listener the connection is counted when it is accepted and its handshake is done before
`connection_made` (net/tls_accept.py; a handshake that fails ends in `handshake_failed`): a verified client certificate
gives the principal, `User:<subject>` mapped by `ssl.principal.mapping.rules`. On a SASL listener every
frame goes to the connection's SaslGate until the client has authenticated (coordinator/security/sasl_gate.py),
under Kafka's smaller frame limit for that stage (`sasl.server.max.receive.size`, 512 KiB); then the principal
is the SASL user's and frames go to the dispatcher. A failed authentication is answered, reading stops, and
the connection closes after `connection.failed.authentication.delay.ms`, as Kafka delays it. With
`connections.max.reauth.ms` (KIP-368) the session ends: a SaslHandshake on the connection starts a
re-authentication through a new gate (same principal, same mechanism), and any other request after the end closes
the connection.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol, cast

import structlog

from coordinator.net.connection import _CLOSED, Connection, Server as BaseServer
from coordinator.net.dispatch import ANONYMOUS, CloseConnection, Session
from protocol.apis import ApiKey

if TYPE_CHECKING:
    from coordinator.security.listener_config import ListenerSecurity
    from coordinator.security.sasl_gate import SaslGate

log = structlog.get_logger("coordinator.net.connection")

SASL_MAX_RECEIVE_BYTES = 524288  # Kafka's sasl.server.max.receive.size


class Server(BaseServer, Protocol):
    """What a secured connection uses of its server, beyond a plain one's."""

    def tls_principal(self, security: ListenerSecurity, peercert: Any) -> str: ...

    def sasl_gate(self, security: ListenerSecurity, peer: str, reauth: tuple[str, str] | None = None) -> SaslGate: ...


class SecuredConnection(Connection):
    __slots__ = ("security", "gate", "expires_at", "authenticated_with", "in_handshake")

    def __init__(self, server: Server, security: ListenerSecurity,
                 accepted_from: tuple[str, int] | None = None) -> None:
        super().__init__(server, security.name)
        self.security = security
        self.gate: SaslGate | None = None  # until the client has authenticated (and while it re-authenticates)
        self.expires_at: float | None = None  # KIP-368: the session's end (loop time), with connections.max.reauth.ms
        self.authenticated_with: tuple[str, str] = ("", "")  # (mechanism, principal) a re-authentication keeps
        # TLS: the peer was counted at accept and the handshake runs until connection_made
        self.in_handshake = accepted_from is not None
        if accepted_from is not None:
            self.peer_host, self.peer_port = accepted_from
            self.admitted = True

    def handshake_failed(self, reason: str) -> None:
        """The TLS handshake failed, timed out or was cut short: give back the count taken at accept."""
        if not self.in_handshake:
            return
        self.in_handshake = self.admitted = False
        self.server.quotas.release(self.peer_host)
        log.info("connection closed", conn=self.conn_id, peer=f"{self.peer_host}:{self.peer_port}", requests=0,
                 reason=reason, listener=self.security.name)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.in_handshake = False
        super().connection_made(transport)
        if not self.admitted:
            return
        server: Server = self.server  # type: ignore[assignment]
        security = self.security
        if security.uses_tls:
            try:
                # the DER certificate: the subject's string types as Java reads them (x500.py), not the dict's text
                ssl_object = transport.get_extra_info("ssl_object")
                principal = server.tls_principal(security, None if ssl_object is None else
                                                 ssl_object.getpeercert(binary_form=True))
            except ValueError as exc:  # Kafka's NoMatchingRule: the certificate names nobody we know
                log.warning("authentication failed", conn=self.conn_id, peer=f"{self.peer_host}:{self.peer_port}",
                            reason=str(exc))
                self.close_reason = "authentication failed: no principal for the client certificate"
                self.closing = True
                cast(asyncio.Transport, transport).abort()
                return
            self.session = Session(security.name, principal)
            if principal != ANONYMOUS:
                log.info("authenticated", conn=self.conn_id, peer=f"{self.peer_host}:{self.peer_port}",
                         mechanism="SSL", principal=principal)
        if security.uses_sasl:
            self.gate = server.sasl_gate(security, f"{self.peer_host}:{self.peer_port}")
            self.max_frame = min(self.max_frame, SASL_MAX_RECEIVE_BYTES)

    def _dispatch(self, request: bytes) -> Any:
        gate = self.gate
        if gate is None and self.expires_at is not None:  # a session that must be renewed (KIP-368)
            if len(request) >= 2 and int.from_bytes(request[:2], "big") == ApiKey.SASL_HANDSHAKE:
                server: Server = self.server  # type: ignore[assignment]
                gate = self.gate = server.sasl_gate(self.security, f"{self.peer_host}:{self.peer_port}",
                                                    self.authenticated_with)
            elif self.loop.time() >= self.expires_at:  # Kafka: "expired credential", the connection closes
                self.requests += 1
                self._violation("the SASL session expired (connections.max.reauth.ms) before the client "
                                "re-authenticated")
                return _CLOSED
        if gate is None:
            return super()._dispatch(request)
        self.requests += 1
        try:
            return self._authenticate(gate, request)
        except CloseConnection as exc:  # a request out of place, a frame that does not parse
            self._violation(str(exc))
        except Exception as exc:  # a bug of ours: never a silent drop
            self._internal_error(exc)
        return _CLOSED

    def _authenticate(self, gate: SaslGate, request: bytes) -> Any:
        """A frame before authentication, answered by the gate; once authenticated the session has its
        principal and later frames go to the dispatcher."""
        answer = gate.receive(request)
        if gate.principal is not None:
            self.session = Session(self.session.listener, gate.principal)
            self.gate = None
            self.max_frame = self.server.config.socket_request_max_bytes
            self.authenticated_with = (gate.mechanism, gate.principal)
            lifetime = gate.session_lifetime_ms
            self.expires_at = None if not lifetime else self.loop.time() + lifetime / 1000.0
        elif gate.failed:
            self._close_after_failed_authentication(answer, gate.failed_reason)
            return _CLOSED
        return answer

    def _close_after_failed_authentication(self, answer: bytes | None, reason: str) -> None:
        """Kafka's delayed close: the answer goes out now, nothing more is read, and the connection closes
        after `connection.failed.authentication.delay.ms` (a client retrying passwords waits that long)."""
        if answer is not None:
            self.out.append(answer)
        self._write_out()
        self.close_reason = f"authentication failed: {reason}"
        self.closing = True
        if self.transport is not None and not self.reading_paused:
            self.transport.pause_reading()
            self.reading_paused = True
        self.loop.call_later(self.security.failed_authentication_delay_ms / 1000.0, self._close_now)

    def _close_now(self) -> None:
        if self.transport is not None:
            self.transport.close()
