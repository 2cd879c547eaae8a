"""One log segment: ``<base>.log`` + ``<base>.index`` + ``<base>.timeindex``.

The segment keeps three sizes of its .log file:

* ``size``: logical end, including batches appended but not yet written;
* ``written_size``: bytes handed to the OS;
* ``durable_size``: bytes covered by a completed flush under the log's policy
  (what readers see by default: the high watermark).

Bookkeeping (``track``) is the same function for a live append and for recovery, so
an index rebuilt on open is byte-identical to the one written while appending.

File descriptors: only a segment being written holds one (``fd``, its .log, while it is
active and until the flush that follows its roll; an idle log may give it back, see
handles.IDLE_WRITERS). Index entries stay in memory (``pending``) until the segment is
rolled or the log closed, when they are written through fds opened for that
(``open_index_files``); recovery rebuilds the active segment's indexes anyway. Reads of
a segment without ``fd`` borrow one from ``handles.HANDLES``.
"""

from __future__ import annotations

import os
import struct
from contextlib import nullcontext

from .batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC, MAGIC_OFFSET, RecordBatch, decode_records
from .errors import CorruptRecordError, InvalidRecordError
from .handles import HANDLES
from .index import OffsetIndex, TimeIndex

_OFFSET_LEN = struct.Struct(">qi")
READ_CHUNK = 1 << 20
MAX_RELATIVE_OFFSET = 0x7FFFFFFF


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


def fits(base_offset: int, size: int, batch_size: int, last_offset: int, segment_bytes: int) -> bool:
    """Can a batch go into a segment (base_offset, size) without passing segment_bytes or
    int32 relative offsets? An empty segment takes any batch."""
    if last_offset - base_offset > MAX_RELATIVE_OFFSET:
        return False
    return size == 0 or size + batch_size <= segment_bytes


class Segment:
    def __init__(self, directory: str, base_offset: int, index_interval_bytes: int) -> None:
        stem = os.path.join(directory, segment_name(base_offset))
        self.base_offset = base_offset
        self.log_path = stem + ".log"
        self.offset_index = OffsetIndex(stem + ".index", base_offset)
        self.time_index = TimeIndex(stem + ".timeindex", base_offset)
        self.index_interval_bytes = index_interval_bytes
        self.fd = -1  # the .log, open while the segment is written (see the module docstring)
        self.size = self.written_size = self.durable_size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.bytes_since_index = 0  # bytes appended since the last index entry (recovery resets it)
        # False for a segment a roll created until a flush job made its directory entry durable: a
        # failed job's repair removes it (log_repair.py)
        self.settled = True

    # ---------------------------------------------------------------- bookkeeping
    def track(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        """Account for a batch at ``position`` (Kafka's LogSegment.append rule)."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self.bytes_since_index > self.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index = 0
        self.bytes_since_index += size
        self.next_offset = last_offset + 1
        self.size = position + size

    def fits(self, batch_size: int, last_offset: int, segment_bytes: int) -> bool:
        return fits(self.base_offset, self.size, batch_size, last_offset, segment_bytes)

    def finalize_time_index(self) -> None:
        """Kafka appends the segment's max timestamp when a segment is closed or rolled."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def take_index_writes(self, fds: tuple[int, int]) -> list[tuple[int, int, bytes]]:
        """Pending index bytes as (fd, file position, data) for the (index, time index) fds
        ``fds``; marks them written."""
        out = []
        for idx, fd in ((self.time_index, fds[1]), (self.offset_index, fds[0])):
            if idx.pending:
                out.append((fd, idx.file_size, bytes(idx.pending)))
                idx.file_size += len(idx.pending)
                idx.pending.clear()
        return out

    # -------------------------------------------------------------- file handles
    def open_log(self) -> None:
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)

    def open_index_files(self) -> tuple[int, int]:
        """Fresh write fds for (.index, .timeindex); the caller closes them. None leaks if
        the second open fails."""
        index_fd = os.open(self.offset_index.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            return index_fd, os.open(self.time_index.path, os.O_WRONLY | os.O_CREAT, 0o644)
        except BaseException:
            os.close(index_fd)
            raise

    def write_indexes(self, fsync) -> None:
        """Write the pending index entries through fds opened for it, fsync, close them."""
        fds = self.open_index_files()
        try:
            for fd, position, data in self.take_index_writes(fds):
                os.pwrite(fd, data, position)
            for fd in fds:
                fsync(fd)
        finally:
            for fd in fds:
                os.close(fd)

    def moved_to(self, directory: str) -> None:
        """The directory was renamed: take every path from ``directory`` (open fds stay valid)."""
        stem = os.path.join(directory, segment_name(self.base_offset))
        HANDLES.forget(self.log_path)
        self.log_path = stem + ".log"
        self.offset_index.path = stem + ".index"
        self.time_index.path = stem + ".timeindex"

    def close_log(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def close(self) -> None:
        """Close the .log fd (if any) and drop the cached read fd of this file."""
        self.close_log()
        HANDLES.forget(self.log_path)

    def _reading(self):
        """The fd to read with: the segment's own while it has one (only the event loop
        thread takes it away, so reads on the loop may use it), else one borrowed from the
        shared cache for the duration of the read."""
        if self.fd >= 0:
            return nullcontext(self.fd)
        return HANDLES.reading(self.log_path)

    # --------------------------------------------------------------------- reads
    def walk(self, start: int, limit: int):
        """Yield (position, RecordBatch header view) from ``start`` up to ``limit``.

        Reads in chunks of READ_CHUNK bytes. Raises CorruptRecordError /
        InvalidRecordError where the bytes cannot be a batch (torn or garbage).
        """
        with self._reading() as fd:
            pos = start
            buf, buf_start = b"", start
            while pos < limit:
                off = pos - buf_start
                if len(buf) - off < MAGIC_OFFSET + 1:
                    buf, buf_start, off = os.pread(fd, min(READ_CHUNK, limit - pos), pos), pos, 0
                    if len(buf) < MAGIC_OFFSET + 1:
                        raise CorruptRecordError(
                            f"torn tail: {limit - pos} bytes at {pos}, less than a batch header")
                _, length = _OFFSET_LEN.unpack_from(buf, off)
                size = length + LOG_OVERHEAD
                if size < HEADER_SIZE:
                    raise CorruptRecordError(f"batch at {pos} has impossible length {length}")
                if pos + size > limit:
                    raise CorruptRecordError(
                        f"torn batch at {pos}: declares {size} bytes, {limit - pos} present")
                if len(buf) - off < size:
                    buf, buf_start, off = os.pread(fd, max(READ_CHUNK, size), pos), pos, 0
                    if len(buf) < size:
                        raise CorruptRecordError(f"short read at {pos}: file ends inside a batch")
                if buf[off + MAGIC_OFFSET] != MAGIC:
                    raise InvalidRecordError(f"batch at {pos} has magic {buf[off + MAGIC_OFFSET]}")
                yield pos, RecordBatch(buf, off)
                pos += size

    def find_position(self, offset: int, limit: int) -> int | None:
        """File position of the first batch with last offset >= ``offset`` (< limit)."""
        _, start = self.offset_index.lookup(offset)
        for pos, batch in self.walk(start, limit):
            if batch.last_offset >= offset:
                return pos
        return None

    def read(self, position: int, max_bytes: int, limit: int) -> bytes:
        """Whole batches from ``position``: at most max_bytes, but at least one batch."""
        with self._reading() as fd:
            data = os.pread(fd, max(0, min(max_bytes, limit - position)), position)
            end = 0
            while len(data) - end >= LOG_OVERHEAD:
                size = _OFFSET_LEN.unpack_from(data, end)[1] + LOG_OVERHEAD
                if end + size > len(data):
                    break
                end += size
            if end == 0 and position < limit:  # first batch larger than max_bytes (KIP-74)
                size = _OFFSET_LEN.unpack(os.pread(fd, LOG_OVERHEAD, position))[1] + LOG_OVERHEAD
                return os.pread(fd, size, position)
            return data[:end]

    def find_timestamp(self, timestamp: int, limit: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record with timestamp >= ``timestamp`` and offset >= ``min_offset``
        (the log start offset: Kafka's LogSegment.findOffsetByTimestamp(timestamp, startingOffset))."""
        _, start = self.offset_index.lookup(max(min_offset, self.time_index.lookup(timestamp)))
        for _, batch in self.walk(start, limit):
            if batch.max_timestamp >= timestamp and batch.last_offset >= min_offset:
                for rec in decode_records(batch):
                    if rec.timestamp >= timestamp and rec.offset >= min_offset:
                        return rec.timestamp, rec.offset
        return None

    def record_with_timestamp(self, timestamp: int, batch_last_offset: int, limit: int):
        """(timestamp, offset) of the first record carrying ``timestamp`` in the batch
        whose last offset is ``batch_last_offset`` (for max-timestamp lookups)."""
        pos = self.find_position(batch_last_offset, limit)
        if pos is None:
            return None
        for _, batch in self.walk(pos, limit):
            for rec in decode_records(batch):
                if rec.timestamp == timestamp:
                    return rec.timestamp, rec.offset
            return timestamp, batch.last_offset
        return None
