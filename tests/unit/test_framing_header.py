import struct

import pytest
from hypothesis import given, strategies as st

from protocol.framing import FrameError, cut_frames, frame
from protocol.header import HeaderError, encode_request_header, parse_request_header, response_header


def test_cut_frames_returns_complete_frames_and_keeps_the_partial_tail():
    buffer = bytearray(frame(b"one") + frame(b"two!") + frame(b"three")[:6])
    assert cut_frames(buffer, 100) == [b"one", b"two!"]
    assert bytes(buffer) == frame(b"three")[:6]
    buffer += frame(b"three")[6:]
    assert cut_frames(buffer, 100) == [b"three"]
    assert buffer == bytearray()


def test_cut_frames_respects_the_limit():
    buffer = bytearray(frame(b"a") + frame(b"b") + frame(b"c"))
    assert cut_frames(buffer, 100, limit=2) == [b"a", b"b"]
    assert cut_frames(buffer, 100, limit=2) == [b"c"]


def test_negative_size_is_rejected():
    with pytest.raises(FrameError, match="negative"):
        cut_frames(bytearray(struct.pack(">i", -1)), 100)


def test_oversized_frame_is_rejected_from_its_prefix_alone():
    with pytest.raises(FrameError, match="socket.request.max.bytes"):
        cut_frames(bytearray(struct.pack(">i", 101)), 100)


def test_an_incomplete_prefix_waits():
    buffer = bytearray(b"\x00\x00")
    assert cut_frames(buffer, 100) == []
    assert buffer == bytearray(b"\x00\x00")


@given(st.lists(st.binary(max_size=50), max_size=20), st.integers(min_value=1, max_value=17))
def test_any_chunking_yields_the_same_frames(payloads, chunk):
    stream = b"".join(frame(p) for p in payloads)
    buffer = bytearray()
    got = []
    for i in range(0, len(stream), chunk):
        buffer += stream[i:i + chunk]
        got += cut_frames(buffer, 1000)
    assert got == payloads
    assert not buffer


@pytest.mark.parametrize("flexible", [False, True])
@pytest.mark.parametrize("client_id", [None, "", "client-é"])
def test_request_header_round_trip(flexible, client_id):
    raw = encode_request_header(3, 12, 77, client_id, flexible) + b"BODY"
    header = parse_request_header(raw, flexible)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 12, 77, client_id)
    assert raw[header.body_offset:] == b"BODY"


def test_v2_header_skips_tagged_fields():
    raw = struct.pack(">hhih", 18, 3, 5, 1) + b"x" + bytes([2, 0, 2, 0xAA, 0xBB, 7, 0]) + b"BODY"
    header = parse_request_header(raw, flexible=True)
    assert header.client_id == "x"
    assert raw[header.body_offset:] == b"BODY"


@pytest.mark.parametrize("raw, message", [
    (b"\x00\x03\x00", "shorter than a request header"),
    (struct.pack(">hhi", 3, 0, 1), "before the client id"),
    (struct.pack(">hhih", 3, 0, 1, 10) + b"abc", "past the end"),
    (struct.pack(">hhih", 3, 0, 1, -2), "negative client id"),
    (struct.pack(">hhih", 3, 0, 1, 2) + b"\xff\xfe", "UTF-8"),
])
def test_bad_headers_raise(raw, message):
    with pytest.raises(HeaderError, match=message):
        parse_request_header(raw, flexible=False)


def test_truncated_tagged_fields_raise():
    raw = struct.pack(">hhih", 18, 3, 5, -1) + bytes([1, 0, 9, 1])
    with pytest.raises(HeaderError):
        parse_request_header(raw, flexible=True)


def test_response_headers():
    assert response_header(5, 0) == b"\x00\x00\x00\x05"
    assert response_header(5, 1) == b"\x00\x00\x00\x05\x00"
