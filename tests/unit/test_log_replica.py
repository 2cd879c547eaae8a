"""PartitionLog.append_at: a replica keeps the offsets of the batches it copies (gaps included)."""

from __future__ import annotations

import pytest

from storage.batch import assign_offsets, build_batch, iter_batches
from storage.errors import CorruptRecordError
from storage.log import FlushPolicy, PartitionLog


def numbered(base: int, count: int = 1) -> bytes:
    buf = bytearray(build_batch([(b"k", b"v%d" % i, i) for i in range(count)]))
    assign_offsets(buf, base)
    return bytes(buf)


async def test_append_at_keeps_offsets_and_bytes_across_a_gap(tmp_path):
    log_ = PartitionLog.open(str(tmp_path / "p-0"), flush_policy=FlushPolicy.NONE)
    try:
        first = numbered(0, 2) + numbered(2)
        assert log_.append_at(first, 0)[:2] == (0, 2)
        later = numbered(7, 3)
        assert log_.append_at(later, 7)[:2] == (7, 9)
        await log_.flush()
        assert log_.log_end_offset == log_.high_watermark == 10
        assert log_.read(0) == first + later
        assert [b.base_offset for b in iter_batches(log_.read(5))] == [7]
        assert log_.append(numbered(0)).base_offset == 10  # a plain append continues after
    finally:
        await log_.close()


async def test_append_at_refuses_an_offset_below_the_end_and_bad_bytes_change_nothing(tmp_path):
    log_ = PartitionLog.open(str(tmp_path / "p-0"), flush_policy=FlushPolicy.NONE)
    try:
        log_.append_at(numbered(0, 3), 0)
        with pytest.raises(ValueError):
            log_.append_at(numbered(2), 2)
        with pytest.raises(CorruptRecordError):
            log_.append_at(numbered(5)[:-1], 5)
        assert log_.log_end_offset == 3
    finally:
        await log_.close()
