"""Issue 13 follow-up (red team a09/a10): one Produce request's batches share one budget of
record bytes to walk, message.max.decompressed.bytes; the piecewise framings (xerial chunks,
gzip members) count at least MIN_PIECE_COST bytes a piece."""

from __future__ import annotations

import gzip

import pytest

from coordinator.data_plane.validation import WalkBudget, check_batch
from coordinator.errors import InvalidRecord
from storage.batch import build_batch
from storage.compression import GZIP, MIN_PIECE_COST, NONE, SNAPPY, ZSTD, decompress_counted
from storage.errors import DecompressedTooLargeError
from tests.support.bombs import FRAMINGS, batch_with_payload
from tests.support.compression import xerial_snappy

CAP = 64 * 1024


def records_of(size: int) -> bytes:
    """The records section of a one-record batch whose value is `size` bytes."""
    return build_batch([(None, bytes(size), 1_000)])[61:]


def check(data: bytes, budget: WalkBudget | None = None, cap: int = CAP):
    return check_batch(data, produce_version=9, max_message_bytes=1 << 20, segment_bytes=1 << 30,
                       max_decompressed_bytes=cap, budget=budget)


@pytest.mark.parametrize("codec", [NONE, ZSTD])
def test_batches_of_one_request_share_the_budget(codec):
    body = records_of(CAP // 2)
    batch = batch_with_payload(codec, body if codec == NONE else FRAMINGS["zstd"][1](body))
    for _ in range(3):  # alone, each batch passes every time
        check(batch)
    budget = WalkBudget(CAP)
    check(batch, budget)
    assert budget.left == CAP - len(body)
    with pytest.raises(InvalidRecord, match="together"):
        check(batch, budget)  # the second would take the request past the cap


def test_a_batch_past_what_is_left_leaves_later_small_batches_their_share():
    budget = WalkBudget(CAP)
    check(batch_with_payload(NONE, records_of(CAP - 200)), budget)
    with pytest.raises(InvalidRecord):
        check(batch_with_payload(NONE, records_of(1000)), budget)
    check(batch_with_payload(NONE, records_of(10)), budget)  # what is left still fits a small one


def test_a_payload_that_does_not_inflate_costs_all_that_was_left():
    budget = WalkBudget(CAP)
    with pytest.raises(Exception):  # noqa: B017 - the codec's own error; the budget left is what is checked
        check(batch_with_payload(ZSTD, b"\x28\xb5\x2f\xfd garbage"), budget)
    assert budget.left == 0


def gzip_members(data: bytes, size: int) -> bytes:
    return b"".join(gzip.compress(data[i:i + size]) for i in range(0, len(data), size))


@pytest.mark.parametrize("codec, pieces", [(SNAPPY, xerial_snappy), (GZIP, gzip_members)], ids=["xerial", "gzip"])
def test_each_piece_of_a_piecewise_framing_counts_at_least_the_minimum(codec, pieces):
    data = bytes(7 * 100)
    assert decompress_counted(codec, pieces(data, 7), CAP) == (data, 100 * MIN_PIECE_COST)
    with pytest.raises(DecompressedTooLargeError):
        decompress_counted(codec, pieces(data, 7), 100 * MIN_PIECE_COST - 1)
    real = bytes(32 * 1024)  # the pieces real producers write count their size only
    assert decompress_counted(codec, pieces(real, 32 * 1024), CAP) == (real, len(real))
