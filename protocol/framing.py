"""Cut 4-byte length-prefixed Kafka frames out of a receive buffer.

The buffer is a bytearray that a connection appends to; `cut_frames` removes every
complete frame from its front in one pass (one `del` per call, not per frame) so a
burst of pipelined requests costs one copy of the tail, not one per request.
"""

from __future__ import annotations

from struct import Struct

_SIZE = Struct(">i")


class FrameError(Exception):
    """The peer sent a length prefix that no valid request can have."""


def cut_frames(buffer: bytearray, max_frame_bytes: int, limit: int = 1 << 30) -> list[bytes]:
    """Remove and return up to `limit` complete frames from the front of `buffer`.

    Raises FrameError for a negative length or one above `max_frame_bytes`, as soon as
    the 4-byte prefix is readable (Kafka's NetworkReceive rejects it before reading the
    body, so an oversized prefix never makes us buffer 2 GiB).
    """
    bounds: list[tuple[int, int]] = []
    pos = 0
    end = len(buffer)
    unpack_from = _SIZE.unpack_from
    while end - pos >= 4 and len(bounds) < limit:
        (size,) = unpack_from(buffer, pos)
        if size < 0:
            raise FrameError(f"negative frame size {size}")
        if size > max_frame_bytes:
            raise FrameError(f"frame size {size} exceeds socket.request.max.bytes {max_frame_bytes}")
        start = pos + 4
        stop = start + size
        if stop > end:
            break
        bounds.append((start, stop))
        pos = stop
    if not pos:
        return []
    if len(bounds) == 1:
        frames = [bytes(buffer[4:pos])]
    else:  # one copy of the complete frames, then slices of bytes: half the cost of a bytearray slice each
        with memoryview(buffer) as view:
            data = view[:pos].tobytes()
        frames = [data[start:stop] for start, stop in bounds]
    del buffer[:pos]
    return frames


def single_frame(data: bytes, max_frame_bytes: int) -> bytes | None:
    """The frame, when `data` is exactly one complete frame of a valid size, else None
    (then the caller buffers it and `cut_frames` judges it). A client that waits for each
    answer sends one frame per read: this skips the buffer for it."""
    if len(data) < 4:
        return None
    (size,) = _SIZE.unpack_from(data)
    if size != len(data) - 4 or size > max_frame_bytes:
        return None
    return data[4:]


def frame(payload: bytes | bytearray) -> bytes:
    """Prefix `payload` with its 4-byte big-endian length."""
    return _SIZE.pack(len(payload)) + payload
