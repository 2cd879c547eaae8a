"""cut_frames over arbitrary chunkings of a stream: every frame comes out whole, as bytes, in order."""

from __future__ import annotations

from hypothesis import given, strategies as st

from protocol.framing import cut_frames, frame, single_frame


@given(payloads=st.lists(st.binary(max_size=40), max_size=40), cuts=st.lists(st.integers(0, 2000), max_size=12),
       limit=st.integers(1, 50))
def test_any_chunking_gives_back_every_frame_in_order(payloads, cuts, limit):
    stream = b"".join(frame(p) for p in payloads)
    points = sorted({min(c, len(stream)) for c in cuts} | {len(stream)})
    buffer, got, start = bytearray(), [], 0
    for point in points:
        buffer += stream[start:point]
        start = point
        while True:
            frames = cut_frames(buffer, 1000, limit)
            assert len(frames) <= limit and all(type(f) is bytes for f in frames)
            got += frames
            if len(frames) < limit:
                break
    assert got == payloads and buffer == bytearray()


def test_single_frame_takes_exactly_one_whole_valid_frame():
    assert single_frame(frame(b"abc"), 1000) == b"abc"
    assert single_frame(frame(b""), 1000) == b""
    assert single_frame(frame(b"abc")[:-1], 1000) is None  # incomplete
    assert single_frame(frame(b"abc") + b"\x00", 1000) is None  # more than one frame's bytes
    assert single_frame(b"\x00\x00", 1000) is None  # not even a size
    assert single_frame(frame(b"x" * 11), 10) is None  # oversized: cut_frames rejects it
    assert single_frame(b"\xff\xff\xff\xff", 1000) is None  # negative size: cut_frames rejects it


@given(stream=st.binary(max_size=64))
def test_single_frame_agrees_with_cut_frames(stream):
    got = single_frame(stream, 40)
    if got is None:
        return
    buffer = bytearray(stream)
    assert cut_frames(buffer, 40) == [got] and not buffer
