"""Decompression of record-batch payloads, in the framings Kafka's producers write.

Codec ids are the low three attribute bits: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

* gzip: RFC 1952 stream (java.util.zip.GZIPOutputStream); zlib from the stdlib.
* snappy: Kafka writes snappy-java's ``SnappyOutputStream`` ("xerial") framing: the
  16-byte header ``\\x82SNAPPY\\x00`` + int32 version + int32 min-compatible version,
  then chunks of (int32 big-endian compressed length, raw snappy block). Non-Java
  clients sometimes send the official snappy framing format or one raw block; both
  are accepted too.
* lz4: the standard LZ4 *frame* format (Kafka's Lz4BlockOutputStream, magic
  0x184D2204, 64 KiB independent blocks).
* zstd: standard zstd frame(s) (zstd-jni ZstdOutputStream), without content size.

Only decompression lives here: the log writes uncompressed batches.
"""

from __future__ import annotations

import struct
import zlib

from .errors import CorruptRecordError, UnsupportedCompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_LEN = 16
SNAPPY_FRAMED_MAGIC = b"\xff\x06\x00\x00sNaPpY"

try:  # cramjam is a declared dependency; the guard keeps a broken install typed.
    import cramjam as _cramjam
except ImportError:  # pragma: no cover - exercised only without the package
    _cramjam = None


def _gzip(data) -> bytes:
    # wbits=47 (32+15): auto-detect gzip/zlib header. Concatenated gzip members are
    # legal in a stream, so loop over unused_data like gzip.decompress does.
    out = []
    buf = bytes(data)
    while buf:
        d = zlib.decompressobj(47)
        out.append(d.decompress(buf))
        if not d.eof:
            raise CorruptRecordError("gzip payload is truncated")
        buf = d.unused_data
    return b"".join(out)


def _snappy(data) -> bytes:
    sn = _need_cramjam("snappy").snappy
    mv = memoryview(data)
    if bytes(mv[:8]) == XERIAL_MAGIC:
        pos, end, out = XERIAL_HEADER_LEN, len(mv), []
        while pos < end:
            if pos + 4 > end:
                raise CorruptRecordError("xerial snappy chunk header is truncated")
            (n,) = struct.unpack_from(">i", mv, pos)
            pos += 4
            if n < 0 or pos + n > end:
                raise CorruptRecordError(f"xerial snappy chunk length {n} runs past the payload")
            out.append(bytes(sn.decompress_raw(mv[pos:pos + n])))
            pos += n
        return b"".join(out)
    if bytes(mv[:10]) == SNAPPY_FRAMED_MAGIC:
        return bytes(sn.decompress(mv))
    return bytes(sn.decompress_raw(mv))


def _lz4(data) -> bytes:
    return bytes(_need_cramjam("lz4").lz4.decompress(data))


def _zstd(data) -> bytes:
    return bytes(_need_cramjam("zstd").zstd.decompress(data))


def _need_cramjam(codec: str):
    if _cramjam is None:
        raise UnsupportedCompressionError(f"no decoder installed for {codec}")
    return _cramjam


_DECODERS = {GZIP: _gzip, SNAPPY: _snappy, LZ4: _lz4, ZSTD: _zstd}


def decompress(codec: int, data) -> bytes:
    """Decompress a batch's records section. Raises typed errors only.

    UnsupportedCompressionError for an unknown codec id or a missing library;
    CorruptRecordError when the payload does not decode.
    """
    fn = _DECODERS.get(codec)
    if fn is None:
        raise UnsupportedCompressionError(f"unknown compression codec id {codec}")
    try:
        return fn(data)
    except (CorruptRecordError, UnsupportedCompressionError):
        raise
    except Exception as exc:  # zlib.error, cramjam.DecompressionError, ValueError...
        raise CorruptRecordError(
            f"{CODEC_NAMES[codec]} payload does not decompress: {exc}") from exc
