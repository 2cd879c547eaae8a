"""Decompression bombs: record-batch payloads that inflate far past their size, per codec."""

from __future__ import annotations

import gzip
import struct

import cramjam
from crc32c import crc32c

from storage.batch import build_batch
from storage.compression import GZIP, LZ4, SNAPPY, ZSTD
from tests.support.compression import xerial_snappy

ZSTD_BLOCK = 128 * 1024  # a zstd block's largest inflated size


def zstd_rle(inflated: int) -> bytes:
    """A zstd frame of RLE blocks: 3 header bytes + 1 byte per 128 KiB (32,768:1)."""
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out += bytes([0x00, 7 << 3])  # no content size, not single-segment; window 128 KiB
    left = inflated
    while left > 0:
        size = min(left, ZSTD_BLOCK)
        left -= size
        header = (1 if left == 0 else 0) | (1 << 1) | (size << 3)  # last?, type RLE, size
        out += header.to_bytes(3, "little") + b"\x00"
    return bytes(out)


#: name -> (codec id, compress(bytes) -> payload): every framing the server accepts
FRAMINGS = {
    "gzip": (GZIP, gzip.compress),
    "snappy-xerial": (SNAPPY, xerial_snappy),
    "snappy-framed": (SNAPPY, lambda d: bytes(cramjam.snappy.compress(d))),
    "snappy-raw": (SNAPPY, lambda d: bytes(cramjam.snappy.compress_raw(d))),
    "lz4": (LZ4, lambda d: bytes(cramjam.lz4.compress(d))),
    "zstd": (ZSTD, lambda d: bytes(cramjam.zstd.compress(d))),
}


def batch_with_payload(codec: int, payload: bytes, count: int = 1) -> bytes:
    """A v2 batch declaring `count` records whose records section is `payload` (CRC fixed)."""
    plain = build_batch([(None, b"x", 1_000 + i) for i in range(count)])
    buf = bytearray(plain[:61] + payload)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, codec)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


SMALLEST_RECORD = bytes([12, 0, 0, 0, 1, 1, 0])  # size 6: attributes, deltas 0, null key, null value, 0 headers


def many_smallest_records(inflated: int) -> bytes:
    """A valid zstd batch of as many 7-byte records as fit in `inflated` bytes: the most
    records (the longest record walk) a batch can hold under that cap."""
    count = inflated // len(SMALLEST_RECORD)
    buf = bytearray(batch_with_payload(ZSTD, bytes(cramjam.zstd.compress(SMALLEST_RECORD * count))))
    struct.pack_into(">i", buf, 23, count - 1)  # lastOffsetDelta
    struct.pack_into(">i", buf, 57, count)  # records count
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def many_xerial_chunks(batch_bytes: int) -> bytes:
    """A valid snappy (xerial) batch of at most `batch_bytes`: one smallest record per chunk, the
    most chunks (the longest chunk walk, ~80,000 in 1 MB) that fit."""
    one = bytes(cramjam.snappy.compress_raw(SMALLEST_RECORD))
    chunk = struct.pack(">i", len(one)) + one
    header = xerial_snappy(b"")[:16]
    count = (batch_bytes - 61 - len(header)) // len(chunk)
    return batch_with_payload(SNAPPY, header + chunk * count, count=count)
