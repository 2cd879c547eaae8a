"""Kafka's sparse segment indexes, kept in memory and appended to their files.

* ``<base>.index``: 8-byte entries (relative offset int32, file position int32).
  Entry (L, P): the batch starting at byte P has offsets up to L, so a reader
  looking for offset >= L can start scanning at P.
* ``<base>.timeindex``: 12-byte entries (timestamp int64, relative offset int32).
  Entry (T, O): T is the largest timestamp seen up to offset O, so any record with a
  timestamp > T comes after O. Kafka appends only when T grows.

Entries are added as in Kafka's LogSegment: before a batch is written, if more than
``index_interval_bytes`` were written since the last entry, add (batch last offset,
batch position) and the time entry (max timestamp so far, its offset).

Files are written without preallocation (Kafka preallocates and trims on close);
loading accepts Kafka's files too: a zero-filled preallocated tail fails the
monotonicity checks and is dropped. New entries are buffered in ``pending`` and
written by the log's flush job; index files are not fsync'ed per flush (recovery
rebuilds what it cannot trust) but are fsync'ed when a segment is rolled or closed.
"""

from __future__ import annotations

import bisect
import os
import struct

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
_MAX_REL = 0x7FFFFFFF


class OffsetIndex:
    __slots__ = ("path", "base_offset", "offsets", "positions", "pending", "file_size")

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.offsets: list[int] = []  # absolute offsets, strictly increasing
        self.positions: list[int] = []  # strictly increasing
        self.pending = bytearray()  # encoded entries not yet written to the file
        self.file_size = 0  # bytes of valid entries in the file

    def __len__(self) -> int:
        return len(self.offsets)

    def append(self, offset: int, position: int) -> None:
        self.offsets.append(offset)
        self.positions.append(position)
        self.pending += OFFSET_ENTRY.pack(offset - self.base_offset, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= ``offset``; (base_offset, 0) if none."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.offsets[i], self.positions[i]

    def last(self) -> tuple[int, int]:
        if not self.offsets:
            return self.base_offset, 0
        return self.offsets[-1], self.positions[-1]

    def load(self, log_size: int) -> bool:
        """Read the file, keep its longest valid prefix. True if the whole file was valid."""
        data = _read(self.path)
        if data is None:
            return False
        whole = len(data) % OFFSET_ENTRY.size == 0
        last_rel, last_pos = -1, -1
        for rel, pos in OFFSET_ENTRY.iter_unpack(data[:len(data) - len(data) % OFFSET_ENTRY.size]):
            if rel <= last_rel or pos <= last_pos or pos >= log_size or rel < 0:
                whole = False
                break
            self.offsets.append(self.base_offset + rel)
            self.positions.append(pos)
            last_rel, last_pos = rel, pos
        self.file_size = len(self.offsets) * OFFSET_ENTRY.size
        return whole

    def truncate_entries(self, keep: int) -> None:
        """Keep only the first ``keep`` entries (in memory; see ``rewrite``)."""
        del self.offsets[keep:]
        del self.positions[keep:]

    def encoded(self) -> bytes:
        b = self.base_offset
        return b"".join(OFFSET_ENTRY.pack(o - b, p) for o, p in zip(self.offsets, self.positions))


class TimeIndex:
    __slots__ = ("path", "base_offset", "timestamps", "offsets", "pending", "file_size")

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.timestamps: list[int] = []  # strictly increasing
        self.offsets: list[int] = []  # non-decreasing, absolute
        self.pending = bytearray()
        self.file_size = 0

    def __len__(self) -> int:
        return len(self.offsets)

    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append only when the timestamp grows (Kafka's TimeIndex.maybeAppend)."""
        if timestamp > (self.timestamps[-1] if self.timestamps else -1):
            self.timestamps.append(timestamp)
            self.offsets.append(offset)
            self.pending += TIME_ENTRY.pack(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> int:
        """Offset of the largest entry with timestamp <= ``timestamp``; base if none."""
        i = bisect.bisect_right(self.timestamps, timestamp) - 1
        return self.offsets[i] if i >= 0 else self.base_offset

    def load(self) -> bool:
        data = _read(self.path)
        if data is None:
            return False
        whole = len(data) % TIME_ENTRY.size == 0
        last_ts, last_off = -1, 0
        for ts, rel in TIME_ENTRY.iter_unpack(data[:len(data) - len(data) % TIME_ENTRY.size]):
            if ts <= last_ts or rel < last_off or rel > _MAX_REL:
                whole = False
                break
            self.timestamps.append(ts)
            self.offsets.append(self.base_offset + rel)
            last_ts, last_off = ts, rel
        self.file_size = len(self.offsets) * TIME_ENTRY.size
        return whole

    def truncate_after(self, offset: int) -> None:
        """Drop entries whose offset is >= ``offset``."""
        i = bisect.bisect_left(self.offsets, offset)
        del self.offsets[i:]
        del self.timestamps[i:]

    def encoded(self) -> bytes:
        b = self.base_offset
        return b"".join(TIME_ENTRY.pack(t, o - b) for t, o in zip(self.timestamps, self.offsets))


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def rewrite(index: OffsetIndex | TimeIndex, fsync=os.fsync) -> None:
    """Replace the file with exactly the in-memory entries (after recovery/truncation)."""
    data = index.encoded()
    tmp = index.path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, index.path)
    index.pending.clear()
    index.file_size = len(data)
