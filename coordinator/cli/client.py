"""A small blocking Kafka wire client for the command line tools.

One `Connection` per broker. It asks ApiVersions first and then, for every call, picks the highest
version that both this client knows how to fill (the range its caller names) and the broker supports,
so the same code talks to this server and to Apache Kafka. Requests are built with protocol/build.py
from one set of keyword values (fields a version lacks are dropped) and encoded and decoded with kio,
the way bench/lib/wire.py does for the tests; the product may not import bench/ or tests/, hence this
copy of the few lines it needs.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from kio.serial import entity_reader
from kio.static.constants import EntityType

from protocol.apis import ApiKey, kio_class
from protocol.build import build
from protocol.codec import encode_request
from protocol.error_codes import error_name
from protocol.header import skip_tagged_fields

CLIENT_ID = "coordinator-groups-cli"
_INT32 = struct.Struct(">i")


class CliError(Exception):
    """A failure shown to the user as one line (exit code 1), never as a traceback."""


def parse_address(address: str) -> tuple[str, int]:
    """HOST:PORT (the host may be an [IPv6] literal)."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CliError(f"bad address {address!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


class Connection:
    """One synchronous connection to one broker; `call` sends a request and returns its decoded answer."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.address = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise CliError(f"cannot connect to {self.address}: {exc.strerror or exc}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0
        self.versions: dict[int, tuple[int, int]] = {}
        answer = self._exchange(ApiKey.API_VERSIONS, 0, {})
        if answer.error_code:
            raise CliError(f"{self.address}: ApiVersions failed: {error_name(answer.error_code)}")
        self.versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}

    def close(self) -> None:
        self.sock.close()

    def version(self, api: ApiKey, lowest: int, highest: int) -> int:
        """The highest version in [lowest, highest] that the broker supports."""
        theirs = self.versions.get(int(api))
        if theirs is not None:
            top = min(highest, theirs[1])
            if top >= max(lowest, theirs[0]):
                return top
        raise CliError(f"{self.address} supports no version {lowest}-{highest} of {api.name}")

    def call(self, api: ApiKey, lowest: int, highest: int, **values: Any) -> Any:
        """Send `api` at the best common version, built from `values`; return the decoded response."""
        return self._exchange(api, self.version(api, lowest, highest), values)

    def _exchange(self, api: ApiKey, version: int, values: dict[str, Any]) -> Any:
        request_cls: Any = kio_class(api, version, EntityType.request)
        request = build(request_cls, **values)
        self.correlation_id += 1
        frame = encode_request(int(api), version, bool(request_cls.__flexible__), self.correlation_id,
                               CLIENT_ID, request)
        try:
            self.sock.sendall(frame)
            (size,) = _INT32.unpack(self._read(4))
            body = self._read(size)
        except TimeoutError:
            raise CliError(f"{self.address}: no answer to {api.name} in time") from None
        except OSError as exc:
            raise CliError(f"{self.address}: {api.name} failed: {exc.strerror or exc}") from None
        (correlation_id,) = _INT32.unpack_from(body, 0)
        if correlation_id != self.correlation_id:
            raise CliError(f"{self.address}: answer to request {correlation_id}, expected {self.correlation_id}")
        response_cls: Any = kio_class(api, version, EntityType.response)
        pos = 4
        if int(response_cls.__header_schema__.__version__) >= 1:
            pos = skip_tagged_fields(body, pos)
        try:
            entity, _size = entity_reader(response_cls)(body, pos)
        except Exception as exc:  # kio raises many types for bytes it cannot read
            raise CliError(f"{self.address}: {api.name} v{version} answer does not parse: {exc}") from None
        return entity

    def _read(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise CliError(f"{self.address} closed the connection")
            chunks += chunk
        return bytes(chunks)
