"""Request bodies in (through kio's reader), response frames out (through the compiled encoder)."""

from __future__ import annotations

from struct import Struct
from typing import Any

from kio.serial import entity_reader

from . import bounds
from .apis import ApiSpec
from .encoder import writer_for
from .header import encode_request_header, plain_body_offset
from .sliced_decode import SLICED_FROM, decode_sliced

_INT32 = Struct(">i")
_SIZE_AND_CORRELATION = Struct(">ii")


class Encoded(bytes):
    """A response body encoded ahead of time (for constant answers such as ApiVersions)."""

    @classmethod
    def of(cls, entity: Any) -> Encoded:
        out = bytearray()
        writer_for(type(entity))(entity, out)
        return cls(out)


class RoomyBody:
    """A response body written into `buffer` after HEAD_ROOM bytes left for its frame's head (size,
    correlation id, a v1 header's empty tags): encode_response fills the head in and returns the
    buffer itself, so an answer of tens of megabytes is not copied again (each copy of 20 MB took
    ~13 ms of the event loop). Encoded once; the buffer is the frame afterwards."""

    __slots__ = ("buffer",)
    HEAD_ROOM = 9

    def __init__(self) -> None:
        self.buffer = bytearray(self.HEAD_ROOM)

    def framed(self, correlation_id: int, header_version: int) -> bytearray:
        frame = self.buffer
        if not header_version:  # header v0 has no tags byte: drop it (O(1) at a bytearray's front)
            del frame[:1]
        _SIZE_AND_CORRELATION.pack_into(frame, 0, len(frame) - 4, correlation_id)
        return frame


class DecodeError(Exception):
    """A request body that kio cannot parse for its declared version (or whose array counts
    cannot fit in the frame: protocol/bounds.py)."""


_decoders: dict[type, tuple[Any, bounds.Checker | None]] = {}


def decode_request(spec: ApiSpec, version: int, frame: bytes, offset: int) -> Any:
    cls = spec.requests[version]
    decoder = _decoders.get(cls)
    if decoder is None:
        decoder = _decoders[cls] = (entity_reader(cls), bounds.checker(cls))
    reader, check = decoder
    try:
        if check is not None:
            check(frame, offset)  # before kio allocates room for any array
        entity, _size = reader(frame, offset)
    except Exception as exc:  # kio raises many types for malformed input
        raise _does_not_parse(spec, version, exc) from exc
    return entity


async def decode_request_sliced(spec: ApiSpec, version: int, frame: bytes, offset: int) -> Any:
    """`decode_request` for a frame over SLICED_FROM: the same entity or the same refusal, but
    other connections are served every few thousand elements (protocol/sliced_decode.py)."""
    try:
        return await decode_sliced(spec.requests[version], frame, offset)
    except Exception as exc:
        raise _does_not_parse(spec, version, exc) from exc


def _does_not_parse(spec: ApiSpec, version: int, exc: Exception) -> DecodeError:
    return DecodeError(f"{spec.name} v{version} body does not parse: {type(exc).__name__}: {exc}")


def decode_common(spec: ApiSpec, version: int, frame: bytes, flexible: bool) -> Any | None:
    """The body of a request whose header is the common kind (header.plain_body_offset), or
    None: an uncommon header or a body that does not parse. For fast paths, which leave
    such frames to the generic path (it judges them, and closes the connection if need be), and
    so are frames over SLICED_FROM (the generic path decodes them without stopping the loop)."""
    if len(frame) > SLICED_FROM:
        return None
    offset = plain_body_offset(frame, flexible)
    if offset < 0:
        return None
    try:
        return decode_request(spec, version, frame, offset)
    except DecodeError:
        return None


def encode_response(correlation_id: int, header_version: int, entity: Any) -> bytes:
    """A complete response frame: size prefix, response header v0/v1, body (a RoomyBody's is its
    own buffer, a bytearray)."""
    if entity.__class__ is RoomyBody:
        return entity.framed(correlation_id, header_version)  # type: ignore[return-value]  # bytes-like
    out = bytearray(8)
    if header_version:
        out.append(0)  # header v1: empty tagged fields
    if entity.__class__ is Encoded:
        out += entity
    else:
        writer_for(type(entity))(entity, out)
    _SIZE_AND_CORRELATION.pack_into(out, 0, len(out) - 4, correlation_id)
    return bytes(out)


class FixedResponse:
    """A response whose frame is the same for every request but for the correlation id.

    Built once through `encode_response` (so its bytes are the generic encoder's); each
    answer is then one pack of (size, correlation id) plus the cached rest.
    """

    __slots__ = ("size", "tail")

    def __init__(self, header_version: int, entity: Any) -> None:
        encoded = encode_response(0, header_version, entity)
        self.size = len(encoded) - 4
        self.tail = encoded[8:]

    def frame(self, correlation_id: int) -> bytes:
        return _SIZE_AND_CORRELATION.pack(self.size, correlation_id) + self.tail


def encode_request(api_key: int, version: int, flexible: bool, correlation_id: int,
                   client_id: str | None, entity: Any) -> bytes:
    """A complete request frame, for the project's own test and benchmark clients."""
    out = bytearray(b"\x00\x00\x00\x00")
    out += encode_request_header(api_key, version, correlation_id, client_id, flexible)
    writer_for(type(entity))(entity, out)
    _INT32.pack_into(out, 0, len(out) - 4)
    return bytes(out)
