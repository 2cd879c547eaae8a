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

Every codec inflates under a cap (``max_bytes``), checked while decompressing: zlib's
``max_length`` for gzip, the length header of each snappy block before it is inflated,
and for the frame formats cramjam's ``decompress_into``, which stops as soon as its output
buffer is full: first a bytearray sized for ordinary ratios, then, if that fills, a lazily
mapped buffer of ``max_bytes`` + 1 bytes (only the pages written cost memory). A zstd
RLE block inflates 32,768:1, so without the cap a 131 KB batch asks for 4 GiB. Kafka
reads compressed batches as a stream one record at a time and has no total; the cap is
ours (message.max.decompressed.bytes in the coordinator's settings).

Two framings are walked piece by piece in Python: xerial snappy chunks and concatenated
gzip members. Each piece counts as at least ``MIN_PIECE_COST`` bytes toward the cap, its
loop overhead (about 1.6 us, the cost of walking some 80 bytes of records): a 1 MB batch of
80,000 one-record chunks took 0.13 s while inflating to only 0.5 MB. Real producers write
32 KiB chunks and one gzip member per batch, so the charge never touches them.
``decompress_counted`` returns what a payload cost, for a caller that budgets many.
"""

from __future__ import annotations

import mmap
import struct
import zlib

from .errors import CorruptRecordError, DecompressedTooLargeError, UnsupportedCompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_LEN = 16
SNAPPY_FRAMED_MAGIC = b"\xff\x06\x00\x00sNaPpY"

#: Default cap on a batch's inflated records (16 MiB); the server passes its setting.
MAX_DECOMPRESSED_BYTES = 16 << 20
#: Cap for batches read back from a log (loader, cleaner, ListOffsets, dump): they passed
#: the Produce check when written, so this only bounds a damaged or foreign file; it is
#: also the largest value message.max.decompressed.bytes may take.
STORED_MAX_DECOMPRESSED_BYTES = 1 << 30
_FIRST_TRY = 64 * 1024  # smallest first output buffer
_RATIO_GUESS = 8  # first output buffer: this many times the compressed size
MIN_PIECE_COST = 128  # bytes a xerial chunk or gzip member counts as, at least (see above)
#: cramjam's DecompressionError texts when the output buffer is full (all codecs, 2.x)
_FULL = ("failed to write whole buffer", "smaller than required")

try:  # cramjam is a declared dependency; the guard keeps a broken install typed.
    import cramjam as _cramjam
except ImportError:  # pragma: no cover - exercised only without the package
    _cramjam = None  # type: ignore[assignment]  # None: the callers check before using it


def _too_large(cap: int) -> DecompressedTooLargeError:
    return DecompressedTooLargeError(f"the records inflate to more than {cap} bytes")


def _gzip(data, cap: int) -> tuple[bytes, int]:
    # wbits=47 (32+15): auto-detect gzip/zlib header. Concatenated gzip members are
    # legal in a stream, so loop over unused_data like gzip.decompress does.
    out = []
    total = 0
    buf = bytes(data)
    while buf:
        d = zlib.decompressobj(47)
        chunk = d.decompress(buf, cap - total + 1)  # never 0, which would mean "no limit"
        total += max(len(chunk), MIN_PIECE_COST)
        if total > cap:
            raise _too_large(cap)
        out.append(chunk)
        if not d.eof:
            raise CorruptRecordError("gzip payload is truncated")
        buf = d.unused_data
    return b"".join(out), total


def _into(fn, data, cap: int) -> tuple[bytes, int]:
    """fn(data, out) into a bounded buffer; a payload that fills cap + 1 bytes is too large.

    First a bytearray sized for ordinary ratios (as fast as cramjam's own allocation);
    if that fills up, once more into an anonymous map of cap + 1 bytes, whose pages
    cost memory only when written (a bytearray of the cap would be zeroed in full)."""
    size = max(_FIRST_TRY, _RATIO_GUESS * len(data))
    if size <= cap:
        out = bytearray(size)
        n = _fill(fn, data, out, cap)
        if n >= 0:
            return bytes(memoryview(out)[:n]), n
        del out
    with mmap.mmap(-1, cap + 1) as big:
        n = _fill(fn, data, big, cap)
        if n < 0:
            raise _too_large(cap)
        return big[:n], n


def _fill(fn, data, out, cap: int) -> int:
    """fn(data, out): the bytes written, or -1 when they do not fit in `out` or pass `cap`."""
    try:
        n = fn(data, out)
    except Exception as exc:
        if any(text in str(exc) for text in _FULL):
            return -1
        raise
    return n if n <= cap else -1


def _snappy(data, cap: int) -> tuple[bytes, int]:
    sn = _need_cramjam("snappy").snappy
    mv = memoryview(data)
    if bytes(mv[:8]) == XERIAL_MAGIC:
        pos, end, out, total = XERIAL_HEADER_LEN, len(mv), [], 0
        while pos < end:
            if pos + 4 > end:
                raise CorruptRecordError("xerial snappy chunk header is truncated")
            (n,) = struct.unpack_from(">i", mv, pos)
            pos += 4
            if n < 0 or pos + n > end:
                raise CorruptRecordError(f"xerial snappy chunk length {n} runs past the payload")
            total += max(_raw_len(sn, mv[pos:pos + n]), MIN_PIECE_COST)
            if total > cap:
                raise _too_large(cap)
            out.append(bytes(sn.decompress_raw(mv[pos:pos + n])))
            pos += n
        return b"".join(out), total
    if bytes(mv[:10]) == SNAPPY_FRAMED_MAGIC:
        return _into(sn.decompress_into, mv, cap)
    if _raw_len(sn, mv) > cap:
        raise _too_large(cap)
    raw = bytes(sn.decompress_raw(mv))
    return raw, len(raw)


def _raw_len(sn, block) -> int:
    """The inflated size a raw snappy block declares in its header (checked when it inflates)."""
    return sn.decompress_raw_len(block)


def _lz4(data, cap: int) -> tuple[bytes, int]:
    return _into(_need_cramjam("lz4").lz4.decompress_into, data, cap)


def _zstd(data, cap: int) -> tuple[bytes, int]:
    return _into(_need_cramjam("zstd").zstd.decompress_into, data, cap)


def _need_cramjam(codec: str):
    if _cramjam is None:
        raise UnsupportedCompressionError(f"no decoder installed for {codec}")
    return _cramjam


_DECODERS = {GZIP: _gzip, SNAPPY: _snappy, LZ4: _lz4, ZSTD: _zstd}


def decompress(codec: int, data, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress a batch's records section, at most `max_bytes` of it (see decompress_counted)."""
    return decompress_counted(codec, data, max_bytes)[0]


def decompress_counted(codec: int, data, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> tuple[bytes, int]:
    """The records section inflated, and what it counted toward `max_bytes` (its size, plus the
    per-piece minimum of the piecewise framings). Raises typed errors only.

    UnsupportedCompressionError for an unknown codec id or a missing library;
    DecompressedTooLargeError when the records inflate past `max_bytes`;
    CorruptRecordError when the payload does not decode.
    """
    fn = _DECODERS.get(codec)
    if fn is None:
        raise UnsupportedCompressionError(f"unknown compression codec id {codec}")
    try:
        return fn(data, max_bytes)
    except (CorruptRecordError, UnsupportedCompressionError, DecompressedTooLargeError):
        raise
    except Exception as exc:  # zlib.error, cramjam.DecompressionError, ValueError...
        raise CorruptRecordError(
            f"{CODEC_NAMES[codec]} payload does not decompress: {exc}") from exc
