"""Cut 4-byte length-prefixed Kafka frames out of a receive buffer.

The buffer is a bytearray that a connection appends to; `cut_frames` removes every
complete frame from its front in one pass (one `del` per call, not per frame) so a
burst of pipelined requests costs one copy of the tail, not one per request.
"""

from __future__ import annotations

from struct import Struct

_SIZE = Struct(">i")
_SIZE_HEAD = Struct(">iI")  # a frame's size, then its api key and version as one int (api_key << 16 | version)


class FrameError(Exception):
    """The peer sent a length prefix that no valid request can have."""


def frame_kind(frame: bytes) -> int:
    """`api_key << 16 | version` of a request frame (its first 4 bytes); -1 if it is shorter."""
    return int.from_bytes(frame[:4], "big") if len(frame) >= 4 else -1


def _check(size: int, max_frame_bytes: int) -> None:
    if size < 0:
        raise FrameError(f"negative frame size {size}")
    if size > max_frame_bytes:
        raise FrameError(f"frame size {size} exceeds socket.request.max.bytes {max_frame_bytes}")


def _bounds(buffer: bytearray, max_frame_bytes: int, limit: int) -> list[tuple[int, int]]:
    bounds: list[tuple[int, int]] = []
    pos = 0
    end = len(buffer)
    unpack_from = _SIZE.unpack_from
    while end - pos >= 4 and len(bounds) < limit:
        (size,) = unpack_from(buffer, pos)
        if size < 0 or size > max_frame_bytes:
            _check(size, max_frame_bytes)
        start = pos + 4
        stop = start + size
        if stop > end:
            break
        bounds.append((start, stop))
        pos = stop
    return bounds


def _counted_bounds(buffer: bytearray, max_frame_bytes: int, limit: int,
                    kinds: dict[int, int]) -> list[tuple[int, int]]:
    """_bounds, counting the frames by frame_kind in `kinds` (runs of one kind: one dict update). A loop
    of its own, not a flag in _bounds: without metrics the loop pays nothing per frame for them."""
    bounds: list[tuple[int, int]] = []
    pos = 0
    end = len(buffer)
    unpack_from = _SIZE.unpack_from
    unpack_head = _SIZE_HEAD.unpack_from
    kind, run = -1, 0
    while end - pos >= 4 and len(bounds) < limit:
        if end - pos >= 8:
            size, head = unpack_head(buffer, pos)
        else:
            (size,), head = unpack_from(buffer, pos), -1
        if size < 0 or size > max_frame_bytes:
            _check(size, max_frame_bytes)
        start = pos + 4
        stop = start + size
        if stop > end:
            break
        bounds.append((start, stop))
        pos = stop
        if size < 4:
            head = -1  # not a kind: the bytes after it are the next frame's
        if head == kind:
            run += 1
        else:
            if run and kind >= 0:
                kinds[kind] = kinds.get(kind, 0) + run
            kind, run = head, 1
    if run and kind >= 0:
        kinds[kind] = kinds.get(kind, 0) + run
    return bounds


def cut_frames(buffer: bytearray, max_frame_bytes: int, limit: int = 1 << 30,
               kinds: dict[int, int] | None = None) -> list[bytes]:
    """Remove and return up to `limit` complete frames from the front of `buffer`.

    Raises FrameError for a negative length or one above `max_frame_bytes`, as soon as
    the 4-byte prefix is readable (Kafka's NetworkReceive rejects it before reading the
    body, so an oversized prefix never makes us buffer 2 GiB).

    `kinds`, if given, counts the frames cut by `frame_kind`, read with the size in one unpack: the
    request metrics' count, at almost no cost per frame.
    """
    if kinds is None:
        bounds = _bounds(buffer, max_frame_bytes, limit)
    else:
        bounds = _counted_bounds(buffer, max_frame_bytes, limit, kinds)
    pos = bounds[-1][1] if bounds else 0
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
