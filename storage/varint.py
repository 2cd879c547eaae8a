"""Zig-zag varints (protobuf style), as Kafka's ByteUtils.writeVarint/readVarint/-long.

Encoding is on the OffsetCommit hot path, so small values come from a precomputed
table instead of a loop.
"""

from __future__ import annotations

from .errors import InvalidRecordError

#: encode_varint(v) is SMALL_VARINTS[v - SMALL_VARINT_MIN] for SMALL_VARINT_MIN <= v <= SMALL_VARINT_MAX
SMALL_VARINT_MIN = -8192
SMALL_VARINT_MAX = 8191


def _encode_slow(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise InvalidRecordError(f"varlong out of range: {value}")
    n = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


SMALL_VARINTS = [_encode_slow(v) for v in range(SMALL_VARINT_MIN, SMALL_VARINT_MAX + 1)]


def encode_varint(value: int) -> bytes:
    """Zig-zag varint/varlong bytes of a signed 64-bit integer."""
    if SMALL_VARINT_MIN <= value <= SMALL_VARINT_MAX:
        return SMALL_VARINTS[value - SMALL_VARINT_MIN]
    return _encode_slow(value)


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Decode one zig-zag varint/varlong at ``pos``; returns (value, next position).

    Raises InvalidRecordError when the buffer ends inside the varint or the varint is
    longer than 10 bytes (what Kafka's readVarlong accepts).
    """
    try:
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        n = b & 0x7F
        shift = 7
        pos += 1
        while True:
            b = buf[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > 63:
                raise InvalidRecordError("varint longer than 10 bytes")
    except IndexError:
        raise InvalidRecordError("buffer ends inside a varint") from None
    return (n >> 1) ^ -(n & 1), pos
