"""Hand-built request frames too large to build as kio objects quickly (a million
partitions), and a light reader of their answers (error codes counted from the bytes)."""

from __future__ import annotations

import struct

from primitives.uvarint import encode_uvarint as uvarint
from protocol.header import read_uvarint
from tests.support.wire_client import WireClient


def _compact_string(text: str) -> bytes:
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def huge_commit_frame(correlation_id: int, group: str, topic: str, partitions: int, offset: int) -> bytes:
    """OffsetCommit v8 (flexible, header v2) committing `offset` for partitions 0..n-1 of `topic`."""
    header = struct.pack(">hhih", 8, 8, correlation_id, 6) + b"hostil" + b"\x00"
    body = bytearray(_compact_string(group) + struct.pack(">i", -1) + _compact_string("") + b"\x00")
    body += uvarint(2) + _compact_string(topic) + uvarint(partitions + 1)
    tail = struct.pack(">qi", offset, -1) + b"\x01\x00"  # offset, leader epoch, metadata "", no tags
    body += b"".join(struct.pack(">i", i) + tail for i in range(partitions))
    body += b"\x00\x00"  # topic tags, request tags
    frame = header + bytes(body)
    return struct.pack(">i", len(frame)) + frame


def commit_answer_codes(frame: bytes) -> dict[int, int]:
    """OffsetCommit v8 response frame (header v1) -> {error code: partitions answered with it}."""
    pos = 4 + 1 + 4  # correlation id, header tags, throttle time
    topics, pos = read_uvarint(frame, pos)
    codes: dict[int, int] = {}
    for _ in range(topics - 1):
        name_length, pos = read_uvarint(frame, pos)
        pos += name_length - 1
        count, pos = read_uvarint(frame, pos)
        for _ in range(count - 1):
            code = struct.unpack_from(">h", frame, pos + 4)[0]
            codes[code] = codes.get(code, 0) + 1
            pos += 7  # index, error code, no tags
        pos += 1
    return codes


def send_frame(client: WireClient, frame: bytes) -> bytes:
    client.send_raw(frame)
    return client.read_frame()
