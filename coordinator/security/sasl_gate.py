"""SASL authentication of one connection on a SASL listener, as Kafka's SaslServerAuthenticator.

Until the client has authenticated, its connection hands every frame here instead of to the dispatcher:

- ApiVersions is answered (the dispatcher's own answer) before the handshake;
- SaslHandshake v0/v1 picks a mechanism from `sasl.enabled.mechanisms` (another gets
  UNSUPPORTED_SASL_MECHANISM and the connection closes);
- after a v1 handshake the tokens come in SaslAuthenticate requests (v0-v2); after a v0 handshake as bare
  size-prefixed tokens without a request header (Kafka's old unframed exchange), answered the same way;
- a failed authentication answers SASL_AUTHENTICATION_FAILED with Kafka's message (or, unframed, nothing),
  and the connection closes after `connection.failed.authentication.delay.ms`;
- any other request before authentication closes the connection, as Kafka does ("Unexpected Kafka request
  of type ... during SASL handshake").

The result is the principal, `User:<name>`. Passwords and tokens are never logged.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.net.dispatch import CloseConnection
from coordinator.security.errors import AuthenticationFailed
from coordinator.security.listener_config import ListenerSecurity
from protocol.apis import API_TABLE, ApiKey
from protocol.codec import DecodeError, decode_request, encode_response
from protocol.framing import frame as size_prefixed
from protocol.header import HeaderError, parse_request_header

log = structlog.get_logger(__name__)

_PREFIX = struct.Struct(">hhi")
_HANDSHAKE = API_TABLE[ApiKey.SASL_HANDSHAKE]
_AUTHENTICATE = API_TABLE[ApiKey.SASL_AUTHENTICATE]
SESSION_LIFETIME_FROM = 1  # SaslAuthenticate v1+ carries the session lifetime (KIP-368)

# states, as Kafka's SaslServerAuthenticator.SaslState
INITIAL, HANDSHAKE_OR_VERSIONS, HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED = range(6)

#: (mechanism, username -> credential lookups) -> an exchange with evaluate(bytes) -> bytes, .complete, .username
ExchangeFactory = Callable[[str], Any]


class SaslGate:
    """The authentication state of one connection; `receive` answers a frame (bytes, or None for no answer)."""

    __slots__ = ("security", "answer_api_versions", "new_exchange", "peer", "state", "unframed", "exchange",
                 "mechanism", "principal", "failed_reason", "reauth", "session_lifetime_ms")

    def __init__(self, security: ListenerSecurity, answer_api_versions: Callable[[bytes], Any],
                 new_exchange: ExchangeFactory, peer: str, reauth: tuple[str, str] | None = None) -> None:
        self.security = security
        self.answer_api_versions = answer_api_versions  # the dispatcher, for ApiVersions frames
        self.new_exchange = new_exchange
        self.peer = peer
        self.state = INITIAL
        self.unframed = False  # a v0 handshake: bare tokens follow
        self.exchange: Any = None
        self.mechanism = ""
        self.principal: str | None = None  # set once authenticated
        self.failed_reason = ""  # set once authentication failed: the connection closes after the delay
        # KIP-368: a re-authentication of (mechanism, principal) starts at the handshake and must keep both
        self.reauth = reauth
        if reauth is not None:
            self.state = HANDSHAKE
        self.session_lifetime_ms = 0  # answered on success (SaslAuthenticate v1+): connections.max.reauth.ms

    @property
    def failed(self) -> bool:
        return self.state == FAILED

    def receive(self, frame: bytes) -> bytes | None:
        if self.state == AUTHENTICATE and self.unframed:
            return self._unframed_token(frame)
        try:
            api_key, version, correlation_id = _PREFIX.unpack_from(frame)
        except struct.error:
            raise CloseConnection("a SASL handshake frame shorter than a request header") from None
        if api_key == ApiKey.API_VERSIONS and self.state in (INITIAL, HANDSHAKE_OR_VERSIONS):
            self.state = HANDSHAKE
            return self.answer_api_versions(frame)
        if api_key == ApiKey.SASL_HANDSHAKE and self.state in (INITIAL, HANDSHAKE_OR_VERSIONS, HANDSHAKE):
            return self._handshake(frame, version, correlation_id)
        if api_key == ApiKey.SASL_AUTHENTICATE and self.state == AUTHENTICATE:
            return self._authenticate(frame, version, correlation_id)
        stage = "authentication" if self.state == AUTHENTICATE else "handshake"
        raise CloseConnection(f"Unexpected Kafka request of type {_name(api_key)} during SASL {stage}.")

    def _decode(self, spec: Any, frame: bytes, version: int) -> Any:
        if not spec.supports(version):
            raise CloseConnection(f"unsupported {spec.name} version {version}")
        try:
            header = parse_request_header(frame, spec.request_is_flexible(version))
            return decode_request(spec, version, frame, header.body_offset)
        except (HeaderError, DecodeError) as exc:
            raise CloseConnection(f"{spec.name} v{version} does not parse: {exc}") from None

    def _handshake(self, frame: bytes, version: int, correlation_id: int) -> bytes:
        request = self._decode(_HANDSHAKE, frame, version)
        enabled = self.security.mechanisms
        response_class = _HANDSHAKE.responses[version]
        header_version = _HANDSHAKE.response_header_versions[version]
        if self.reauth is not None and version == 0:
            raise CloseConnection("re-authentication needs SaslHandshake v1 (SaslAuthenticate requests)")
        changed = self.reauth is not None and request.mechanism != self.reauth[0]
        if request.mechanism not in enabled or changed:
            self.state = FAILED
            self.failed_reason = (f"re-authentication with {request.mechanism[:64]!r} after {self.reauth[0]!r}"
                                  if changed and self.reauth else
                                  f"unsupported SASL mechanism {request.mechanism[:64]!r}")
            log.warning("authentication failed", peer=self.peer, reason=self.failed_reason)
            return encode_response(correlation_id, header_version,
                                   response_class(error_code=ErrorCode.unsupported_sasl_mechanism,
                                                  mechanisms=(self.reauth[0],) if changed and self.reauth else enabled))
        self.mechanism = request.mechanism
        self.exchange = self.new_exchange(request.mechanism)
        self.unframed = version == 0
        self.state = AUTHENTICATE
        return encode_response(correlation_id, header_version, response_class(error_code=ErrorCode.none,
                                                                              mechanisms=enabled))

    def _authenticate(self, frame: bytes, version: int, correlation_id: int) -> bytes:
        request = self._decode(_AUTHENTICATE, frame, version)
        response_class = _AUTHENTICATE.responses[version]
        header_version = _AUTHENTICATE.response_header_versions[version]
        lifetime_ms = self.security.reauth_ms if version >= SESSION_LIFETIME_FROM else 0
        extra = {"session_lifetime": datetime.timedelta(milliseconds=lifetime_ms)} \
            if version >= SESSION_LIFETIME_FROM else {}
        try:
            challenge = self._evaluate(request.auth_bytes)
            if self.state == COMPLETE:
                self.session_lifetime_ms = lifetime_ms
        except AuthenticationFailed as exc:
            return encode_response(correlation_id, header_version, response_class(
                error_code=ErrorCode.sasl_authentication_failed, error_message=str(exc),
                auth_bytes=b"", **extra))
        return encode_response(correlation_id, header_version, response_class(
            error_code=ErrorCode.none, error_message=None, auth_bytes=challenge, **extra))

    def _unframed_token(self, token: bytes) -> bytes | None:
        try:
            challenge = self._evaluate(token)
        except AuthenticationFailed:
            return None  # the unframed exchange has no error answer: the connection just closes
        return size_prefixed(challenge)  # PLAIN's empty one too, as Kafka sends it

    def _evaluate(self, token: bytes) -> bytes:
        """One step of the mechanism; on its last, the principal. AuthenticationFailed ends the exchange."""
        try:
            challenge = self.exchange.evaluate(token)
        except AuthenticationFailed as exc:
            self.state = FAILED
            self.failed_reason = str(exc)
            log.warning("authentication failed", peer=self.peer, mechanism=self.mechanism,
                        reason=getattr(exc, "detail", str(exc)), principal=_user(self.exchange.username))
            raise
        if self.exchange.complete:
            principal = _user(self.exchange.username)
            if self.reauth is not None and principal != self.reauth[1]:
                self.state = FAILED
                self.failed_reason = f"Cannot change principals during re-authentication from {self.reauth[1]}: " \
                                     f"{principal}"
                log.warning("authentication failed", peer=self.peer, mechanism=self.mechanism,
                            reason=self.failed_reason, principal=principal)
                raise AuthenticationFailed(self.failed_reason)
            self.state = COMPLETE
            self.principal = principal
            log.info("re-authenticated" if self.reauth else "authenticated", peer=self.peer, mechanism=self.mechanism,
                     principal=self.principal)
        return bytes(challenge)


def _user(name: str | None) -> str | None:
    return None if name is None else f"User:{name}"


def _name(api_key: int) -> str:
    """As Kafka's ApiKeys names it (METADATA), or the bare key when it is not one of ours."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"
