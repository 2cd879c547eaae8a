"""primitives.uvarint: the one unsigned-varint codec of protocol/ and storage/. Values round-trip
over the whole 5-byte range, and each layer's reader refuses a cut or over-long varint with that
layer's error."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from primitives.uvarint import encode_uvarint, uvarint_reader
from protocol import bounds, header
from storage import record_schema
from storage.errors import InvalidRecordError

TOO_LONG = b"\x80\x80\x80\x80\x80\x01"  # a sixth byte: Kafka and kio refuse it
CUT = b"\x80\x80"


class Refused(Exception):
    pass


@given(st.integers(0, 2**35 - 1), st.binary(max_size=3), st.binary(max_size=3))
def test_values_round_trip_at_any_position(value, before, after):
    read = uvarint_reader(Refused)
    raw = encode_uvarint(value)
    assert len(raw) == max(1, (value.bit_length() + 6) // 7)
    for buf in (before + raw + after, memoryview(before + raw + after), bytearray(before + raw + after)):
        assert read(buf, len(before)) == (value, len(before) + len(raw))


def test_every_one_byte_value_is_its_byte():
    assert [encode_uvarint(n) for n in range(128)] == [bytes([n]) for n in range(128)]
    assert encode_uvarint(128) == b"\x80\x01" and encode_uvarint(300) == b"\xac\x02"


def test_the_fifth_byte_may_use_all_seven_bits():
    assert uvarint_reader(Refused)(b"\xff\xff\xff\xff\x7f", 0) == (2**35 - 1, 5)


def test_a_reader_raises_the_errors_it_was_made_with():
    with pytest.raises(Refused, match="longer than 5 bytes before byte 6"):
        uvarint_reader(Refused)(b"\x00" + TOO_LONG, 1)
    with pytest.raises(IndexError):
        uvarint_reader(Refused)(CUT, 0)
    with pytest.raises(KeyError):
        uvarint_reader(Refused, KeyError)(CUT, 0)


@pytest.mark.parametrize("read, too_long, cut", [
    (header.read_uvarint, header.HeaderError, header.HeaderError),
    (bounds.read_uvarint, bounds.CountError, IndexError),
    (record_schema.read_uvarint, InvalidRecordError, InvalidRecordError),
])
def test_each_layer_refuses_with_its_own_error(read, too_long, cut):
    assert read(b"\xac\x02", 0) == (300, 2)
    with pytest.raises(too_long):
        read(TOO_LONG, 0)
    with pytest.raises(cut):
        read(CUT, 0)
    with pytest.raises(cut):
        read(b"", 0)
