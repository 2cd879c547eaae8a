"""The one blocking Kafka wire client, shared by the benchmarks and the tests (tests/support/wire_client.py).

Requests are kio request entities (or protocol/legacy_messages.py's); answers are decoded with kio's reader,
so what a test checks is the server's bytes read by an independent decoder. `request_frame` is also what the
load generators pre-encode their frames with.

    with WireClient(host, port) as client:
        answer = client.call(ApiVersionsRequest())                  # send, read, decode, check
        client.send_raw(request_frame(a, 1) + request_frame(b, 2))  # pipelined by hand
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from kio.serial import entity_reader
from kio.static.constants import EntityType

from protocol.apis import API_TABLE, kio_class
from protocol.codec import encode_request
from protocol.header import skip_tagged_fields

CLIENT_ID = "bench"
_INT32 = struct.Struct(">i")
_OWN: Any = object()  # "this client's own client id" (None is a null client id)


def request_frame(request: Any, correlation_id: int = 1, client_id: str | None = CLIENT_ID) -> bytes:
    """A complete request frame (size prefix + header + body) for a request entity."""
    api_key, version = int(request.__api_key__), int(request.__version__)
    spec = API_TABLE.get(api_key)
    flexible = spec.request_is_flexible(version) if spec is not None else bool(request.__flexible__)
    return encode_request(api_key, version, flexible, correlation_id, client_id, request)


def response_class(request_cls: Any) -> Any:
    """The response entity class of a request class (protocol/legacy_messages.py's included)."""
    return kio_class(int(request_cls.__api_key__), int(request_cls.__version__), EntityType.response)


def response_class_for(request: Any) -> Any:
    request_cls: Any = type(request)
    return response_class(request_cls)


def decode_response(request_cls: Any, body: bytes, whole: bool = False) -> Any:
    """Decode a response body (correlation id first, size prefix removed); with `whole`, AssertionError
    if the entity does not fill the body exactly."""
    cls = response_class(request_cls)
    pos = 4
    if int(cls.__header_schema__.__version__) >= 1:
        pos = skip_tagged_fields(body, pos)
    entity: Any
    entity, size = entity_reader(cls)(body, pos)
    if whole and pos + size != len(body):
        raise AssertionError("response frame has trailing bytes")
    return entity


class WireClient:
    """One synchronous connection. `call` checks the answer's correlation id and, when `whole_frames`
    (the default), that the answer fills its frame exactly; AssertionError names what differs."""

    client_id: str | None = CLIENT_ID  # class defaults: also for a client made without __init__
    whole_frames = True
    correlation_id = 0

    def __init__(self, host: str, port: int, timeout: float = 10.0, whole_frames: bool = True) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.whole_frames = whole_frames

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        """The next answer's body (correlation id first), without its size prefix."""
        (size,) = _INT32.unpack(self._read_exactly(4))
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("server closed the connection")
            chunks += chunk
        return bytes(chunks)

    def send(self, request: Any, client_id: str | None = _OWN) -> int:
        self.correlation_id += 1
        own = self.client_id if client_id is _OWN else client_id
        self.sock.sendall(request_frame(request, self.correlation_id, own))
        return self.correlation_id

    def receive(self, request: Any, correlation_id: int) -> Any:
        frame = self.read_frame()
        (got,) = _INT32.unpack_from(frame, 0)
        if got != correlation_id:
            raise AssertionError(f"correlation id {got}, expected {correlation_id}")
        return decode_response(type(request), frame, self.whole_frames)

    def call(self, request: Any, client_id: str | None = _OWN) -> Any:
        return self.receive(request, self.send(request, client_id))

    def is_closed_by_server(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
