"""Issue 13 defect 2: compressed records inflate under a cap (message.max.decompressed.bytes),
checked while inflating, for every codec and framing the server accepts."""

from __future__ import annotations

import gzip
import os
import resource

import pytest
from kio.schema.errors import ErrorCode

from coordinator.config import Config
from coordinator.data_plane.validation import check_batch
from coordinator.errors import InvalidRecord
from storage.batch import build_batch, decode_records
from storage.compression import MAX_DECOMPRESSED_BYTES, STORED_MAX_DECOMPRESSED_BYTES, ZSTD, decompress
from storage.errors import CorruptRecordError, DecompressedTooLargeError
from tests.support.bombs import FRAMINGS, batch_with_payload, zstd_rle
from tests.support.data_plane import Plane

CAP = 256 * 1024


@pytest.mark.parametrize("framing", sorted(FRAMINGS))
def test_exactly_the_cap_inflates_one_byte_more_is_refused(framing):
    codec, compress = FRAMINGS[framing]
    data = os.urandom(CAP // 2) + bytes(CAP // 2)  # half incompressible, half a run
    assert decompress(codec, compress(data), CAP) == data
    with pytest.raises(DecompressedTooLargeError):
        decompress(codec, compress(data + b"!"), CAP)


def test_gzip_members_count_together():
    payload = gzip.compress(bytes(CAP // 2 + 1)) + gzip.compress(bytes(CAP // 2))
    with pytest.raises(DecompressedTooLargeError):
        decompress(1, payload, CAP)
    assert len(decompress(1, gzip.compress(bytes(CAP // 2)) * 2, CAP)) == CAP


@pytest.mark.parametrize("framing", sorted(FRAMINGS))
def test_garbage_is_still_corrupt_not_too_large(framing):
    codec, compress = FRAMINGS[framing]
    payload = compress(bytes(CAP * 2))
    with pytest.raises(CorruptRecordError):
        decompress(codec, payload[:len(payload) // 2] + b"\xff" * 64, CAP * 4)


def test_a_4_gib_zstd_bomb_stops_at_the_cap_without_inflating_it():
    bomb = zstd_rle(4 << 30)
    assert len(bomb) < 132 * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with pytest.raises(DecompressedTooLargeError):
        decompress(ZSTD, bomb)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert grown <= 2 * MAX_DECOMPRESSED_BYTES, f"peak memory grew by {grown} bytes"


def test_decoding_a_stored_batch_is_capped_too():
    """The loader, the cleaner, ListOffsets and the dump tool decode through decode_records,
    under a cap that any batch Produce accepted passes (the setting's largest value)."""
    with pytest.raises(DecompressedTooLargeError):
        decode_records(batch_with_payload(ZSTD, zstd_rle(CAP + 1)), CAP)
    assert STORED_MAX_DECOMPRESSED_BYTES >= MAX_DECOMPRESSED_BYTES
    with pytest.raises(ValueError):
        Config.load(overrides={"message.max.decompressed.bytes": str(STORED_MAX_DECOMPRESSED_BYTES + 1)}, environ={})


def test_check_batch_answers_invalid_record():
    data = batch_with_payload(ZSTD, zstd_rle(CAP + 1))
    with pytest.raises(InvalidRecord):
        check_batch(data, produce_version=9, max_message_bytes=1 << 20, segment_bytes=1 << 30,
                    max_decompressed_bytes=CAP)


async def test_produce_of_a_bomb_is_invalid_record_and_appends_nothing(tmp_path):
    async with Plane(str(tmp_path), **{"message.max.decompressed.bytes": str(CAP)}) as plane:
        await plane.create("t")
        bomb = batch_with_payload(ZSTD, zstd_rle(4 << 30))
        answer = await plane.produce("t", 0, bomb)
        assert answer.error_code == ErrorCode.invalid_record
        # The setting is the cap: one record of CAP bytes inflated is refused, a smaller one is stored.
        big = FRAMINGS["zstd"][1](bytes(CAP))
        assert (await plane.produce("t", 0, batch_with_payload(ZSTD, big))).error_code == ErrorCode.invalid_record
        plain = build_batch([(None, bytes(CAP // 2), 1_000)])
        ok = await plane.produce("t", 0, batch_with_payload(ZSTD, FRAMINGS["zstd"][1](plain[61:])))
        assert (ok.error_code, ok.base_offset) == (ErrorCode.none, 0)


@pytest.mark.parametrize("first_byte", [0x00, 0x01, 0x03, 0x7F])  # sizes 0, -1, -2, -64
def test_the_record_walk_refuses_sizes_that_are_not_positive(first_byte):
    body = bytes([first_byte]) + bytes(200)
    with pytest.raises(InvalidRecord):
        check_batch(batch_with_payload(ZSTD, FRAMINGS["zstd"][1](body)), produce_version=9,
                    max_message_bytes=1 << 20, segment_bytes=1 << 30)


def test_the_record_walk_hops_one_and_multi_byte_sizes():
    plain = build_batch([(None, bytes(n), 1_000 + i) for i, n in enumerate([1, 50, 300, 70_000, 2])])
    info = check_batch(batch_with_payload(ZSTD, FRAMINGS["zstd"][1](plain[61:]), count=5), produce_version=9,
                       max_message_bytes=1 << 20, segment_bytes=1 << 30)
    assert info.records_count == 5
    short = batch_with_payload(ZSTD, FRAMINGS["zstd"][1](plain[61:-1]), count=5)
    with pytest.raises(InvalidRecord):
        check_batch(short, produce_version=9, max_message_bytes=1 << 20, segment_bytes=1 << 30)
