"""Unsigned varints (Kafka's ByteUtils.writeUnsignedVarint/readUnsignedVarint): compact
lengths and counts, tagged-field headers. The one codec of the wire (protocol/) and of
the flexible record versions in the log (storage/).

Each layer refuses a bad varint with its own error type (a request header's, a count
checker's, a record's), so the reader is made per layer by `uvarint_reader`; the reading
is the same for all: at most 5 bytes, as Kafka and kio read them.
"""

from __future__ import annotations

from collections.abc import Callable

Buffer = bytes | bytearray | memoryview
UvarintReader = Callable[[Buffer, int], "tuple[int, int]"]

_SMALL = [bytes([n]) for n in range(128)]


def encode_uvarint(value: int) -> bytes:
    """The unsigned varint bytes of `value` (>= 0)."""
    if value < 128:
        return _SMALL[value]
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def uvarint_reader(too_long: type[Exception], truncated: type[Exception] = IndexError) -> UvarintReader:
    """`read(buf, pos) -> (value, next position)`, raising `too_long` for a varint longer
    than 5 bytes and `truncated` when `buf` ends inside it."""

    def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
        try:
            byte = buf[pos]
            if byte < 0x80:
                return byte, pos + 1
            value = byte & 0x7F
            for shift in (7, 14, 21, 28):
                pos += 1
                byte = buf[pos]
                value |= (byte & 0x7F) << shift
                if byte < 0x80:
                    return value, pos + 1
        except IndexError:
            raise truncated("truncated varint") from None
        raise too_long(f"varint longer than 5 bytes before byte {pos + 1}")

    return read_uvarint
