"""Request header v1/v2 parsing and response header v0/v1 writing, by hand.

Kafka picks the request header version from the API's flexible versions: v2 (with
tagged fields) from an API's first flexible version on, v1 before it. The header's
client_id is a legacy (int16-length) nullable string even in v2. Response header v1
adds an empty tagged-field section; ApiVersions always answers with header v0.
"""

from __future__ import annotations

from dataclasses import dataclass
from struct import Struct

from primitives.uvarint import uvarint_reader

REQUEST_PREFIX = Struct(">hhi")  # api_key, api_version, correlation_id: the first 8 bytes of a request
_KEY_VERSION_CORRELATION = REQUEST_PREFIX
_INT16 = Struct(">h")
_INT32 = Struct(">i")


class HeaderError(Exception):
    """The request header does not parse."""


#: An unsigned varint of a header (at most 5 bytes); HeaderError when it is cut or longer.
read_uvarint = uvarint_reader(HeaderError, HeaderError)


@dataclass(slots=True)  # built once per request: not frozen, which would cost more to construct
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the request body starts in the frame


def peek_api(frame: bytes) -> tuple[int, int, int]:
    """Return (api_key, api_version, correlation_id) from the first 8 bytes."""
    if len(frame) < 8:
        raise HeaderError(f"frame of {len(frame)} bytes is shorter than a request header")
    return _KEY_VERSION_CORRELATION.unpack_from(frame, 0)


def skip_tagged_fields(data: bytes, pos: int) -> int:
    count, pos = read_uvarint(data, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        pos += size
        if pos > len(data):
            raise HeaderError("tagged field runs past the end of the frame")
    return pos


def parse_request_header(frame: bytes, flexible: bool) -> RequestHeader:
    """Parse header v1 (flexible=False) or v2 (flexible=True)."""
    api_key, api_version, correlation_id = peek_api(frame)
    if len(frame) < 10:
        raise HeaderError("frame ends before the client id")
    (length,) = _INT16.unpack_from(frame, 8)
    pos = 10
    if length == -1:
        client_id = None
    elif length < 0:
        raise HeaderError(f"negative client id length {length}")
    else:
        end = pos + length
        if end > len(frame):
            raise HeaderError("client id runs past the end of the frame")
        try:
            client_id = frame[pos:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HeaderError("client id is not valid UTF-8") from exc
        pos = end
    if flexible:
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def plain_body_offset(frame: bytes, flexible: bool) -> int:
    """Where the body starts when the header is the common kind, else -1.

    Common: an ASCII or null client id and, in header v2, an empty tagged-field section.
    For anything else (non-ASCII or malformed client id, tagged fields, truncation) the
    caller uses parse_request_header, which judges it. Fast paths use this to skip the
    client id without decoding it or building a RequestHeader.
    """
    end = len(frame)
    if end < 10:
        return -1
    (length,) = _INT16.unpack_from(frame, 8)
    pos = 10
    if length > 0:
        pos += length
        if pos > end or not frame[10:pos].isascii():
            return -1
    elif length < -1:
        return -1
    if flexible:
        if pos >= end or frame[pos]:
            return -1
        pos += 1
    return pos


def response_header(correlation_id: int, version: int) -> bytes:
    """Response header v0 (correlation id) or v1 (plus empty tagged fields)."""
    if version == 0:
        return _INT32.pack(correlation_id)
    return _INT32.pack(correlation_id) + b"\x00"


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, flexible: bool
) -> bytes:
    """Request header v1/v2, for the project's own test and benchmark clients."""
    out = bytearray(_KEY_VERSION_CORRELATION.pack(api_key, api_version, correlation_id))
    if client_id is None:
        out += _INT16.pack(-1)
    else:
        raw = client_id.encode("utf-8")
        out += _INT16.pack(len(raw)) + raw
    if flexible:
        out += b"\x00"
    return bytes(out)
