"""cut_frames over arbitrary chunkings of a stream: every frame comes out whole, as bytes, in order."""

from __future__ import annotations

from hypothesis import given, strategies as st

from protocol.framing import cut_frames, frame


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
