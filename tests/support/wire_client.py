"""A small blocking Kafka wire client built on kio, for protocol-level tests.

It sends any kio request entity at its version and decodes the response with kio's
reader, so tests check the server against an independent decoder.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from kio.serial import entity_reader

from protocol.apis import API_TABLE
from protocol.codec import encode_request

_RESPONSE_CLASSES: dict[tuple[int, int], type] = {}


def response_class_for(request: Any) -> type:
    from kio.index import load_entity_module
    from kio.static.constants import EntityType

    key = (int(request.__api_key__), int(request.__version__))
    spec = API_TABLE.get(key[0])
    if spec is not None and key[1] in spec.responses:  # includes protocol/legacy_messages.py's
        return spec.responses[key[1]]
    cls = _RESPONSE_CLASSES.get(key)
    if cls is None:
        module = load_entity_module(API_TABLE[key[0]].name, key[1], EntityType.response)
        cls = next(v for v in vars(module).values()
                   if isinstance(v, type) and getattr(v, "__type__", None) is EntityType.response)
        _RESPONSE_CLASSES[key] = cls
    return cls


def request_frame(request: Any, correlation_id: int, client_id: str | None = "test-client") -> bytes:
    api_key, version = int(request.__api_key__), int(request.__version__)
    flexible = API_TABLE[api_key].request_is_flexible(version) if api_key in API_TABLE else request.__flexible__
    return encode_request(api_key, version, flexible, correlation_id, client_id, request)


class WireClient:
    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("server closed the connection")
            chunks += chunk
        return bytes(chunks)

    def send(self, request: Any, client_id: str | None = "test-client") -> int:
        self.correlation_id += 1
        self.sock.sendall(request_frame(request, self.correlation_id, client_id))
        return self.correlation_id

    def receive(self, request: Any, correlation_id: int) -> Any:
        frame = self.read_frame()
        got = struct.unpack_from(">i", frame, 0)[0]
        assert got == correlation_id, f"correlation id {got}, expected {correlation_id}"
        cls = response_class_for(request)
        header_size = 4 if cls.__header_schema__.__version__ == 0 else 5
        response, size = entity_reader(cls)(frame, header_size)
        assert header_size + size == len(frame), "response frame has trailing bytes"
        return response

    def call(self, request: Any, client_id: str | None = "test-client") -> Any:
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
