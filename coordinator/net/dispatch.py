"""From a request frame to a response frame: header, version check, decode, handler, encode.

Handlers are bound to rows of protocol.apis.API_TABLE by api key; `verify()` refuses a
table row without a handler or a handler without a row. A handler gets the request
context and the decoded kio request and returns the kio response, an awaitable of it
(for delayed operations), or None (no response, as Produce with acks=0).

A fast path may be registered with a handler (`register(key, handler, fast=...)`) for hot
requests: it gets the raw frame and returns the complete response frame (or a Deferred one),
or None to send the frame down the generic path. It may specialise parsing and encoding
only; the handler's logic must be the one the generic handler calls. `fast_path(key)` and
`handler(key)` give tests what is registered.

An answer that arrives later is a Deferred: a coordinator.completion.Completion, or the Task
of a coroutine handler (asyncio's own), made in one place (`later`).

Protocol violations (unknown api key, unsupported version of anything but
ApiVersions, a header or body that does not parse) raise CloseConnection: Kafka closes
such connections, and so do we, with a WARN line from the connection. So does a failure
of our own on the answer path (a handler that raises, a response that does not encode):
logged once with its traceback, then the connection closes, so the client learns at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from struct import error as StructError
from typing import Any

import structlog

from coordinator.completion import Completion
from coordinator.net.request_metrics import RequestMetrics
from protocol.apis import API_TABLE, ApiKey, ApiSpec
from protocol.codec import DecodeError, decode_request, decode_request_sliced, encode_response
from protocol.header import REQUEST_PREFIX, HeaderError, parse_request_header, peek_api
from protocol.sliced_decode import SLICED_FROM

ANONYMOUS = "User:ANONYMOUS"  # Kafka's KafkaPrincipal.ANONYMOUS: PLAINTEXT, and TLS without a client certificate

log = structlog.get_logger(__name__)


class CloseConnection(Exception):
    """The peer broke the protocol; the reason goes into the WARN log line."""


@dataclass(slots=True)  # not frozen: frozen dataclasses cost ~1 µs more per request to build
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    client_port: int
    listener: str = ""  # the name of the listener the request came in on ("": the first)
    principal: str = ANONYMOUS


@dataclass(frozen=True, slots=True)
class Session:
    """Who is on a connection: its listener's name and, once authenticated, its principal."""

    listener: str
    principal: str = ANONYMOUS


Handler = Callable[[RequestContext, Any], Any]
_NO_SESSION = Session("")
FastPath = Callable[[bytes, int, int], "bytes | Deferred | None"]  # (frame, api_version, correlation_id)


@dataclass(slots=True)
class Deferred:
    """A response still being computed; `finish` encodes it once `future` is done (a
    Completion, settled without the loop, or the Task of a coroutine handler: the same interface)."""

    future: asyncio.Future | Completion
    correlation_id: int
    header_version: int
    api_name: str
    request_bytes: int = 0  # the request's size, counted by its connection while outstanding
    release: Callable[[], Any] | None = None  # frees what the answer holds if its connection goes away
    # Handled before its connection's later requests are read (a sliced decode: Kafka handles a
    # connection's requests one at a time, so a later commit must not overtake an earlier one).
    barrier: bool = False
    # For the request metrics (net/request_metrics.py), set by its connection: when its request was
    # read, and its kind (api_key << 16 | version).
    started: float = 0.0
    metrics_key: int = 0


class Abandonable:
    """What a handler returns for an answer that may be dropped if the client goes away (a parked
    Fetch): `awaitable` computes it; `release()` is called, and the task cancelled, if the
    connection closes first. Other deferred answers run to the end (a write must still land)."""

    __slots__ = ("awaitable", "release")

    def __init__(self, awaitable: Any, release: Callable[[], Any]) -> None:
        self.awaitable = awaitable
        self.release = release


def later(answer: Any, correlation_id: int, header_version: int, api_name: str,
          release: Callable[[], Any] | None = None, barrier: bool = False) -> Deferred:
    """The Deferred for a Completion, or for an awaitable run as a Task (the one place one is made)."""
    if not isinstance(answer, Completion):
        answer = asyncio.ensure_future(answer)
    return Deferred(answer, correlation_id, header_version, api_name, release=release, barrier=barrier)


class Dispatcher:
    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}
        self._fast: dict[int, FastPath] = {}
        self._unsupported_api_versions: Callable[[], Any] | None = None
        self.metrics: RequestMetrics | None = None  # counts the error codes of generic answers when set

    def register(self, api_key: ApiKey, handler: Handler, fast: FastPath | None = None) -> None:
        """The handler of `api_key`, and optionally its fast path (a parse/encode shortcut)."""
        if int(api_key) in self._handlers:
            raise ValueError(f"{api_key.name} has a handler already")
        self._handlers[int(api_key)] = handler
        if fast is not None:
            self._fast[int(api_key)] = fast

    def drop_fast_paths(self) -> None:
        """With an authorizer every request goes the generic way, where its handler asks before it acts."""
        self._fast.clear()

    def handler(self, api_key: ApiKey) -> Handler:
        return self._handlers[int(api_key)]

    def fast_path(self, api_key: ApiKey) -> FastPath:
        return self._fast[int(api_key)]

    def on_unsupported_api_versions(self, build: Callable[[], Any]) -> None:
        """KIP-511: what a too-new ApiVersions request gets (a v0 response body)."""
        self._unsupported_api_versions = build

    def verify(self) -> None:
        missing = sorted(set(API_TABLE) - set(self._handlers))
        extra = sorted(set(self._handlers) - set(API_TABLE))
        if missing or extra or self._unsupported_api_versions is None:
            raise RuntimeError(f"api table and handlers disagree: missing={missing} extra={extra}")

    def dispatch(self, frame: bytes, client_host: str, client_port: int,
                 session: Session = _NO_SESSION) -> bytes | Deferred | None:
        try:
            api_key, api_version, correlation_id = REQUEST_PREFIX.unpack_from(frame)
        except StructError:
            try:
                peek_api(frame)  # raises, with the reason
            except HeaderError as exc:
                raise CloseConnection(str(exc)) from None
            raise
        fast = self._fast.get(api_key)
        if fast is not None:
            answer = fast(frame, api_version, correlation_id)
            if answer is not None:
                return answer
        return self.dispatch_generic(frame, api_key, api_version, correlation_id, client_host, client_port, session)

    def dispatch_generic(self, frame: bytes, api_key: int, api_version: int, correlation_id: int,
                         client_host: str, client_port: int,
                         session: Session = _NO_SESSION) -> bytes | Deferred | None:
        """Header, version check, kio decode, handler, encode: the path of every request kind."""
        spec = API_TABLE.get(api_key)
        if spec is None:
            raise CloseConnection(f"unknown api key {api_key}")
        if not spec.supports(api_version):
            if api_key == ApiKey.API_VERSIONS and api_version > spec.max_version:
                assert self._unsupported_api_versions is not None
                return encode_response(correlation_id, 0, self._unsupported_api_versions())
            raise CloseConnection(
                f"unsupported {spec.name} version {api_version} "
                f"(supported {spec.min_version}-{spec.max_version})"
            )
        try:
            header = parse_request_header(frame, spec.request_is_flexible(api_version))
        except HeaderError as exc:
            raise CloseConnection(f"{spec.name} v{api_version} header does not parse: {exc}") from None
        context = RequestContext(api_key, api_version, correlation_id, header.client_id, client_host, client_port,
                                 session.listener, session.principal)
        if len(frame) > SLICED_FROM:
            return later(self._sliced(spec, context, frame, header.body_offset),
                         correlation_id, spec.response_header_versions[api_version], spec.name, barrier=True)
        try:
            request = decode_request(spec, api_version, frame, header.body_offset)
        except DecodeError as exc:
            raise CloseConnection(str(exc)) from None
        return self._respond(spec, api_version, correlation_id, self._handle(spec, context, request))

    def _handle(self, spec: ApiSpec, context: RequestContext, request: Any) -> Any:
        try:
            return self._handlers[context.api_key](context, request)
        except CloseConnection:
            raise
        except Exception:
            log.exception("handler failed", api=spec.name, version=context.api_version, client_id=context.client_id)
            raise CloseConnection(f"internal error handling {spec.name}") from None

    async def _sliced(self, spec: ApiSpec, context: RequestContext, frame: bytes, body_offset: int) -> Any:
        """A frame over SLICED_FROM: decoded a few thousand elements at a time, other connections
        served in between (kio would hold the loop for seconds on a 64 MB one), then handled. Its
        connection keeps it in its place among the answers, as any Deferred."""
        try:
            request = await decode_request_sliced(spec, context.api_version, frame, body_offset)
        except DecodeError as exc:
            raise CloseConnection(str(exc)) from None
        result = self._handle(spec, context, request)
        if result.__class__ is Abandonable:  # a parked Fetch: its connection waits for it here anyway
            result = result.awaitable
        if hasattr(result, "__await__"):  # a coroutine, Future or Completion
            result = await result
        return result

    def _respond(self, spec: ApiSpec, version: int, correlation_id: int, result: Any) -> bytes | Deferred | None:
        header_version = spec.response_header_versions[version]
        if result is None:
            return None
        if isinstance(result, Completion):
            return Deferred(result, correlation_id, header_version, spec.name)
        if result.__class__ is Abandonable:
            return later(result.awaitable, correlation_id, header_version, spec.name, release=result.release)
        if hasattr(result, "__await__"):  # coroutine or Future; cheaper than inspect.isawaitable
            return later(result, correlation_id, header_version, spec.name)
        if self.metrics is not None:
            self.metrics.response_errors(spec.name, result)
        try:
            return encode_response(correlation_id, header_version, result)
        except Exception:
            raise _does_not_encode(spec.name) from None

    @staticmethod
    def finish(deferred: Deferred, metrics: RequestMetrics | None = None) -> bytes | None:
        """Encode a completed deferred response (its error codes counted in `metrics` if given);
        raises CloseConnection if its handler failed."""
        future = deferred.future
        if future.cancelled():
            raise CloseConnection(f"{deferred.api_name} was cancelled")
        exc = future.exception()
        if exc is not None:
            if isinstance(exc, CloseConnection):
                raise exc
            log.error("handler failed", api=deferred.api_name, exc_info=exc)
            raise CloseConnection(f"internal error handling {deferred.api_name}")
        result = future.result()
        if result is None:
            return None
        if metrics is not None:
            metrics.response_errors(deferred.api_name, result)
        try:
            return encode_response(deferred.correlation_id, deferred.header_version, result)
        except Exception:
            raise _does_not_encode(deferred.api_name) from None


def _does_not_encode(api_name: str) -> CloseConnection:
    """A response that does not encode (say a string past its wire limit): logged once, with
    the traceback of the exception being handled, and the connection closes rather than
    leaving the client to its own timeout."""
    log.exception("response does not encode", api=api_name)
    return CloseConnection(f"the {api_name} response does not encode")


