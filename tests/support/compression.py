"""Compressed payloads as Kafka clients write them (framings no library produces for us)."""

from __future__ import annotations

import struct

import cramjam


def xerial_snappy(data: bytes, chunk: int = 32 * 1024) -> bytes:
    """snappy-java SnappyOutputStream: magic, version 1, compatible 1, (len, block)*."""
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), chunk):
        block = bytes(cramjam.snappy.compress_raw(data[i:i + chunk]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)
