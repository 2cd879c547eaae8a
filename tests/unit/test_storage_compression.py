"""Compressed batches, built here in the framings Kafka's Java producer writes."""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest
from crc32c import crc32c

from storage.batch import Record, build_batch, decode_records, validate
from storage.errors import CorruptRecordError, UnsupportedCompressionError
from tests.support.compression import xerial_snappy

RECORDS = [(b"key-%d" % i, (b"value-%d-" % i) * 50, 1_700_000_000_000 + i,
            (("trace", b"t%d" % i),)) for i in range(40)]


def compressed_batch(codec: int, compress) -> bytes:
    """Re-pack an uncompressed batch's records section with ``compress``."""
    plain = build_batch(RECORDS, base_offset=100)
    payload = compress(plain[61:])
    buf = bytearray(plain[:61] + payload)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, codec)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def expected():
    return [Record(100 + i, ts, k, v, h) for i, (k, v, ts, h) in enumerate(RECORDS)]


# ------------------------------------------------------------------ LZ4 frame
def xxh32(data: bytes, seed: int = 0) -> int:
    """Reference XXH32 (for the LZ4 frame header checksum)."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    n, i = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 16 <= n:
            for j in range(4):
                lane = struct.unpack_from("<I", data, i + 4 * j)[0]
                v[j] = (rotl((v[j] + lane * p2) & m, 13) * p1) & m
            i += 16
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 4 <= n:
        h = (rotl((h + struct.unpack_from("<I", data, i)[0] * p3) & m, 17) * p4) & m
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & m, 11) * p1) & m
        i += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    return h ^ (h >> 16)


def kafka_lz4(data: bytes) -> bytes:
    """Kafka's Lz4BlockOutputStream: FLG=0x60 (v01, independent blocks), BD=0x40 (64 KiB)."""
    flg, bd = 0x60, 0x40
    out = bytearray(struct.pack("<I", 0x184D2204) + bytes([flg, bd]))
    out.append((xxh32(bytes([flg, bd])) >> 8) & 0xFF)
    for i in range(0, len(data), 64 * 1024):
        block = bytes(cramjam.lz4.compress_block(data[i:i + 64 * 1024], store_size=False))
        out += struct.pack("<I", len(block)) + block
    out += struct.pack("<I", 0)  # end mark
    return bytes(out)


def test_xxh32_reference_vectors():
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF


@pytest.mark.parametrize("codec,compress", [
    (1, gzip.compress),
    (2, xerial_snappy),
    (2, lambda d: xerial_snappy(d, chunk=100)),  # many chunks
    (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),  # raw block (non-Java clients)
    (2, lambda d: bytes(cramjam.snappy.compress(d))),  # official framing format
    (3, kafka_lz4),
    (3, lambda d: bytes(cramjam.lz4.compress(d))),
    (4, lambda d: bytes(cramjam.zstd.compress(d))),
], ids=["gzip", "snappy-xerial", "snappy-xerial-chunks", "snappy-raw", "snappy-framed",
        "lz4-kafka", "lz4-frame", "zstd"])
def test_compressed_batches_decode(codec, compress):
    data = compressed_batch(codec, compress)
    batch = validate(data)
    assert batch.compression == codec
    assert decode_records(batch) == expected()


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_unsupported(codec):
    data = compressed_batch(codec, lambda d: d)
    with pytest.raises(UnsupportedCompressionError):
        validate(data)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_payload_is_corrupt(codec):
    data = compressed_batch(codec, lambda d: b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" * 8 + b"junk" * 10)
    with pytest.raises(CorruptRecordError):
        validate(data)


def test_truncated_gzip_is_corrupt():
    data = compressed_batch(1, lambda d: gzip.compress(d)[:-20])
    with pytest.raises(CorruptRecordError):
        validate(data)
