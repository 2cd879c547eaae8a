"""Segment rolls planned and opened before an append changes anything.

An append that needs new segments learns it here (``plan_rolls``), and every file those
rolls need is opened here (``open_rolls``): the new .log, the index files of the segment
each roll closes (written and fsync'ed by the next flush job) and the directory (fsync'ed
by that job). Only when all of them are open does the log change. If any open fails
(EMFILE, ENFILE, ENOMEM, ...), whatever was opened is closed, the files created are
removed, and the error goes back to the appender: the log is exactly as before.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from .recovery import unlink_segment
from .segment import MAX_RELATIVE_OFFSET, Segment, fits


class Roll(NamedTuple):
    """A new segment opened for an append, and the index fds of the segment it follows."""

    segment: Segment
    index_fds: tuple[int, int]


def plan_rolls(active: Segment, leo: int, metas: list, total: int,
               segment_bytes: int) -> dict[int, int] | None:
    """{index of the batch that starts a new segment: its base offset}, or None when the
    whole append fits in ``active`` (the usual case, decided without a loop)."""
    if len(metas) == 1:
        end = leo + metas[0][2]
    else:
        end = leo + sum(m[2] for m in metas) + len(metas) - 1
    if end - active.base_offset <= MAX_RELATIVE_OFFSET and (
            active.size + total <= segment_bytes or active.size == 0 and len(metas) == 1):
        return None
    plan: dict[int, int] = {}
    base, size = active.base_offset, active.size
    for i, (_position, batch_size, delta, _ts) in enumerate(metas):
        if not fits(base, size, batch_size, leo + delta, segment_bytes):
            plan[i] = base = leo
            size = 0
        size += batch_size
        leo += delta + 1
    return plan or None


def open_rolls(path: str, active: Segment, plan: dict[int, int], index_interval_bytes: int,
               *, open_dir: bool) -> tuple[dict[int, Roll], int]:
    """Open every file of ``plan``'s rolls: ({batch index: Roll}, directory fd or -1).
    Raises the OSError of the first open that fails, with nothing left open or created."""
    opened: dict[int, Roll] = {}
    dir_fd = -1
    new_files = [p for p in (active.offset_index.path, active.time_index.path) if not os.path.exists(p)]
    try:
        if open_dir:
            dir_fd = os.open(path, os.O_RDONLY)
        previous = active
        for i, base in plan.items():
            index_fds = previous.open_index_files()
            seg = Segment(path, base, index_interval_bytes)
            seg.settled = False
            opened[i] = Roll(seg, index_fds)
            seg.open_log()
            previous = seg
    except BaseException:
        for roll in opened.values():
            for fd in roll.index_fds:
                os.close(fd)
            roll.segment.close()
            unlink_segment(roll.segment)  # created by this roll: base offsets past the log's end
        for name in new_files:  # the index files of a segment rolled for the first time
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
        if dir_fd >= 0:
            os.close(dir_fd)
        raise
    return opened, dir_fd
