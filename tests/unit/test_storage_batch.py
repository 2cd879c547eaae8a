"""Record batch v2: round trips, exact bytes, corruption, offset patching."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from storage.batch import (
    HEADER,
    Record,
    RecordBatch,
    assign_offsets,
    build_batch,
    decode_records,
    ensure_valid,
    iter_batches,
    validate,
)
from storage.errors import CorruptRecordError, InvalidRecordError, RecordError
from storage.varint import encode_varint, read_varint
from tests.support.examples import examples


def crc32c_reference(data: bytes) -> int:
    """Bitwise CRC-32C (Castagnoli, reflected poly 0x82F63B78): independent of the package."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_reference_crc_matches_the_standard_check_value():
    assert crc32c_reference(b"123456789") == 0xE3069283


# ----------------------------------------------------------------------- varints
@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_varint_round_trip(n):
    enc = encode_varint(n)
    assert read_varint(enc, 0) == (n, len(enc))


def test_varint_known_bytes():
    # zig-zag: 0->0, -1->1, 1->2, 63->126, 64->128 (two bytes), -65 -> 129
    assert encode_varint(0) == b"\x00"
    assert encode_varint(-1) == b"\x01"
    assert encode_varint(1) == b"\x02"
    assert encode_varint(64) == b"\x80\x01"
    assert encode_varint(-65) == b"\x81\x01"
    assert encode_varint(300) == b"\xd8\x04"


def test_varint_truncated_and_overlong_are_invalid_records():
    with pytest.raises(InvalidRecordError):
        read_varint(b"\x80", 0)
    with pytest.raises(InvalidRecordError):
        read_varint(b"\xff" * 11, 0)


# -------------------------------------------------------------------- known bytes
def test_small_batch_has_exactly_the_bytes_of_the_spec():
    batch = build_batch([(b"k", b"v", 1000), (None, None, 1005, (("h", b"x"), ("n", None)))],
                        base_offset=5)
    rec0 = bytes([0x00, 0x00, 0x00, 0x02, ord("k"), 0x02, ord("v"), 0x00])  # attrs, tsΔ0, offΔ0, key, value, 0 headers
    rec1 = bytes([0x00, 0x0A, 0x02, 0x01, 0x01, 0x04,  # attrs, tsΔ5, offΔ1, null key, null value, 2 headers
                  0x02, ord("h"), 0x02, ord("x"),  # "h" -> b"x"
                  0x02, ord("n"), 0x01])  # "n" -> null
    records = bytes([len(rec0) * 2]) + rec0 + bytes([len(rec1) * 2]) + rec1
    after_crc = struct.pack(">hiqqqhii", 0, 1, 1000, 1005, -1, -1, -1, 2) + records
    crc = crc32c_reference(after_crc)
    expected = struct.pack(">qiibI", 5, 49 + len(records), -1, 2, crc) + after_crc
    assert batch == expected
    assert len(batch) == 61 + len(records)


# -------------------------------------------------------------------- round trips
headers_st = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))),
                      max_size=3).map(tuple)
record_st = st.tuples(st.one_of(st.none(), st.binary(max_size=40)),
                      st.one_of(st.none(), st.binary(max_size=200)),
                      st.integers(min_value=0, max_value=1 << 45), headers_st)


@settings(max_examples=examples(200))
@given(st.lists(record_st, min_size=1, max_size=20), st.integers(min_value=0, max_value=1 << 40))
def test_round_trip(records, base_offset):
    data = build_batch(records, base_offset=base_offset)
    batch = validate(data)
    assert batch.base_offset == base_offset
    assert batch.records_count == len(records)
    assert batch.base_timestamp == records[0][2]
    assert batch.max_timestamp == max(r[2] for r in records)
    decoded = decode_records(batch)
    assert decoded == [Record(base_offset + i, ts, k, v, h) for i, (k, v, ts, h) in enumerate(records)]


def test_record_objects_and_batch_flags():
    recs = [Record(0, 7, b"a", b"b", (("x", b"y"),))]
    data = build_batch(recs, base_offset=3, producer_id=42, producer_epoch=1, base_sequence=9,
                       is_transactional=True, log_append_time=True, partition_leader_epoch=4)
    b = validate(data)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.partition_leader_epoch) == (42, 1, 9, 4)
    assert b.is_transactional and b.is_log_append_time and not b.is_control
    assert decode_records(b)[0] == Record(3, 7, b"a", b"b", (("x", b"y"),))


def test_empty_batch_is_rejected():
    with pytest.raises(InvalidRecordError):
        build_batch([])


# ------------------------------------------------------------------- corruption
def _good() -> bytearray:
    return bytearray(build_batch([(b"key", b"value", 1), (b"k2", b"v2", 2)], base_offset=0))


def _recrc(buf: bytearray) -> bytearray:
    from crc32c import crc32c
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return buf


def test_bad_crc_is_corrupt():
    buf = _good()
    buf[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate(buf)
    with pytest.raises(CorruptRecordError, match="CRC"):
        ensure_valid(RecordBatch(buf))


@pytest.mark.parametrize("cut", [1, 10, 40])
def test_truncated_batch_is_corrupt(cut):
    buf = _good()[:-cut]
    with pytest.raises(CorruptRecordError):
        validate(buf)


def test_negative_length_is_corrupt():
    buf = _good()
    struct.pack_into(">i", buf, 8, -5)
    with pytest.raises(CorruptRecordError):
        validate(buf)
    with pytest.raises(CorruptRecordError):
        list(iter_batches(bytes(buf)))


def test_wrong_magic_is_invalid():
    buf = _good()
    buf[16] = 1
    with pytest.raises(InvalidRecordError, match="magic"):
        validate(buf)
    with pytest.raises(InvalidRecordError):
        list(iter_batches(bytes(buf)))


def test_count_mismatch_is_invalid():
    buf = _good()
    struct.pack_into(">i", buf, 57, 3)  # 3 declared, 2 present
    struct.pack_into(">i", buf, 23, 2)
    with pytest.raises(InvalidRecordError):
        validate(_recrc(buf))
    buf = _good()
    struct.pack_into(">i", buf, 57, 1)  # 1 declared, 2 present
    struct.pack_into(">i", buf, 23, 0)
    with pytest.raises(InvalidRecordError, match="left after"):
        validate(_recrc(buf))


def test_last_offset_delta_must_match_count():
    buf = _good()
    struct.pack_into(">i", buf, 23, 5)
    with pytest.raises(InvalidRecordError, match="lastOffsetDelta"):
        validate(_recrc(buf))


def test_garbage_record_body_is_invalid_not_a_crash():
    buf = _good()
    buf[62:] = b"\x7f" * (len(buf) - 62)  # record length varint far too long
    with pytest.raises(RecordError):
        validate(_recrc(buf))


def test_iter_batches_stops_cleanly_at_a_partial_trailing_batch():
    a = build_batch([(b"a", b"1", 1)], base_offset=0)
    b = build_batch([(b"b", b"2", 2)], base_offset=1)
    buf = a + b + b[:30]
    found = list(iter_batches(buf))
    assert [x.base_offset for x in found] == [0, 1]
    assert [x.base_offset for x in iter_batches(a + b[:5])] == [0]
    for x in found:
        ensure_valid(x)


def test_assign_offsets_patches_offset_and_epoch_keeping_the_crc():
    buf = bytearray(build_batch([(b"a", b"1", 1), (b"b", b"2", 2)]))
    before = bytes(buf[17:])
    assign_offsets(buf, 1234567, partition_leader_epoch=9)
    b = validate(buf)
    assert (b.base_offset, b.partition_leader_epoch, b.last_offset) == (1234567, 9, 1234568)
    assert bytes(buf[17:]) == before  # nothing under the CRC moved
    assert [r.offset for r in decode_records(b)] == [1234567, 1234568]


def test_header_struct_is_61_bytes():
    assert HEADER.size == 61
