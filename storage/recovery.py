"""Opening a segment after a clean or unclean shutdown.

* The **last** (active) segment is always scanned from its start: every batch's
  length, magic, CRC and offset order are checked, and both indexes are rebuilt from
  the scan. Its index files are not fsync'ed per flush, so after a machine crash
  they cannot be trusted; rebuilding costs one sequential read plus a CRC-32C
  (hardware accelerated) per batch, like Kafka's recovery of unflushed segments.
* An **older** segment was fsync'ed with its indexes when it was rolled, so its
  indexes are trusted after checks (file length, monotonic entries, every offset
  entry pointing at a v2 batch header with base offset <= the entry's offset), and
  only the bytes after the last offset-index entry are scanned (CRC included). An
  index that is missing, garbage or too short is rebuilt by a full scan.

At the first bad batch the file is truncated there and the cut is logged (file,
position, bytes removed, reason); the caller deletes any later segment, so nothing
past a bad batch is ever exposed.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import structlog

from .batch import MAGIC, MAGIC_OFFSET, ensure_valid
from .errors import RecordError
from .index import rewrite
from .segment import MAX_RELATIVE_OFFSET, Segment

log = structlog.get_logger(__name__)
_BASE_MAGIC = struct.Struct(">q8xb")


@dataclass(frozen=True)
class Cut:
    """What recovery removed from one segment."""

    file: str
    position: int
    bytes: int
    reason: str


def open_segment(directory: str, base_offset: int, index_interval_bytes: int, *,
                 last: bool, fsync=os.fsync) -> tuple[Segment, Cut | None]:
    seg = Segment(directory, base_offset, index_interval_bytes)
    seg.open_log()
    try:
        file_size = os.fstat(seg.fd).st_size
        trusted = not last and _load_indexes(seg, file_size)
        if trusted:
            _, start = seg.offset_index.last()
            seg.max_timestamp = seg.time_index.last_timestamp()
            seg.offset_of_max_timestamp = seg.time_index.offsets[-1] if seg.time_index.offsets else -1
            seg.next_offset = base_offset  # lower bound for the scan's order check
            seg.size = start
            seg.bytes_since_index = 0  # the entry at `start` is already there
        else:
            seg.offset_index.truncate_entries(0)
            seg.time_index.truncate_after(base_offset)
            start = 0
        before = (len(seg.offset_index), len(seg.time_index))
        valid_end, reason = _scan(seg, start, file_size)
        cut = None
        if reason is not None:
            cut = Cut(seg.log_path, valid_end, file_size - valid_end, reason)
            log.warning("storage.recovery.truncated", file=cut.file, position=cut.position,
                        bytes=cut.bytes, reason=cut.reason)
            os.ftruncate(seg.fd, valid_end)
            fsync(seg.fd)
        seg.size = seg.written_size = seg.durable_size = valid_end
        seg.time_index.truncate_after(seg.next_offset)
        seg.finalize_time_index()  # as Kafka's recover() does
        changed = (not trusted or cut is not None or seg.offset_index.pending
                   or seg.time_index.pending or (len(seg.offset_index), len(seg.time_index)) != before)
        if changed:
            if not last:
                log.info("storage.recovery.index_rebuilt", file=seg.offset_index.path,
                         entries=len(seg.offset_index), time_entries=len(seg.time_index))
            rewrite(seg.offset_index, fsync)
            rewrite(seg.time_index, fsync)
        if not last:
            seg.close()  # an older segment holds no fd; reads borrow one (handles.py)
        return seg, cut
    except BaseException:
        seg.close()
        raise


def resume_segment(seg: Segment, end: int) -> Cut | None:
    """Take a segment's bookkeeping back to its first ``end`` bytes (a batch boundary), after a failed
    write left more in memory than on disk (log_repair.py): the in-memory index entries of batches
    below ``end`` are kept, the bytes after the last of them scanned again (as for a trusted older
    segment), and the index files are to be written whole (``pending``) at the segment's roll or close.
    Its .log must already be cut to ``end``; a bad batch below it is cut too (returned)."""
    index = seg.offset_index
    kept = bisect.bisect_left(index.positions, end)
    index.truncate_entries(kept)
    last_offset, start = index.last()
    seg.time_index.truncate_after(last_offset + 1 if kept else seg.base_offset)
    seg.max_timestamp = seg.time_index.last_timestamp()
    seg.offset_of_max_timestamp = seg.time_index.offsets[-1] if seg.time_index.offsets else -1
    seg.next_offset = seg.base_offset
    seg.size, seg.bytes_since_index = start, 0
    valid_end, reason = _scan(seg, start, end)
    cut = None
    if reason is not None:
        cut = Cut(seg.log_path, valid_end, end - valid_end, reason)
        log.warning("storage.recovery.truncated", file=cut.file, position=cut.position, bytes=cut.bytes,
                    reason=cut.reason)
        os.ftruncate(seg.fd, valid_end)
    seg.size = seg.written_size = seg.durable_size = valid_end
    seg.time_index.truncate_after(seg.next_offset)
    for idx in (index, seg.time_index):
        idx.pending[:] = idx.encoded()
        idx.file_size = 0
    return cut


#: Directories opened at once by open_all: their time is mostly fsyncs (of a new partition's directory, of the
#: active segment's rebuilt index files), which a file system commits together when they come concurrently.
OPEN_THREADS = 16


def open_all(paths: Sequence[str], index_interval_bytes: int, fsync=os.fsync) -> list[list[Segment]]:
    """open_segments of each directory, several at once (each in a thread of its own; a directory is opened by
    one thread only). If one fails, the segments the others opened are closed and its error is raised."""
    if len(paths) <= 1:
        return [open_segments(path, index_interval_bytes, fsync) for path in paths]
    with ThreadPoolExecutor(min(len(paths), OPEN_THREADS), thread_name_prefix="log-open") as pool:
        futures = [pool.submit(open_segments, path, index_interval_bytes, fsync) for path in paths]
    failed = next((f.exception() for f in futures if f.exception() is not None), None)
    if failed is not None:
        for future in futures:
            if future.exception() is None:
                for seg in future.result():
                    seg.close()
        raise failed
    return [future.result() for future in futures]


def open_segments(path: str, index_interval_bytes: int, fsync=os.fsync) -> list[Segment]:
    """Open every segment of a partition directory (creating it if needed), recovering
    the last one and cutting anything that follows a truncated segment."""
    os.makedirs(path, exist_ok=True)
    bases = sorted(int(n[:-4]) for n in os.listdir(path)
                   if n.endswith(".log") and len(n) == 24 and n[:20].isdigit())
    segments: list[Segment] = []
    try:
        if not bases:
            seg = Segment(path, 0, index_interval_bytes)
            seg.open_log()
            segments.append(seg)
            fsync_dir(path, fsync)
        for i, base in enumerate(bases):
            if segments and base < segments[-1].next_offset:
                drop_segments(path, bases[i:], index_interval_bytes,
                              f"base offset {base} overlaps the previous segment")
                break
            last = i == len(bases) - 1
            seg, cut = open_segment(path, base, index_interval_bytes, last=last, fsync=fsync)
            segments.append(seg)
            if cut is not None and not last:
                drop_segments(path, bases[i + 1:], index_interval_bytes,
                              f"follows {os.path.basename(cut.file)}, truncated by recovery")
                break
        # A roll creates the new (empty) file before the flush job writes the batches
        # that precede it; a crash in between leaves an empty last segment whose base
        # offset lies past the previous segment's end. Keeping it would leave a hole
        # below the log end offset that no fetch could ever cross.
        while (len(segments) > 1 and segments[-1].size == 0
               and segments[-1].base_offset > segments[-2].next_offset):
            seg = segments.pop()
            seg.close()
            drop_segments(path, [seg.base_offset], index_interval_bytes,
                          f"empty, and its base offset {seg.base_offset} is past the end "
                          f"{segments[-1].next_offset} of the previous segment")
        if segments[-1].fd < 0:  # the last one was opened as an older segment
            seg = segments.pop()
            seg.close()
            segments.append(open_segment(path, seg.base_offset, index_interval_bytes,
                                         last=True, fsync=fsync)[0])
    except BaseException:
        for seg in segments:
            seg.close()
        raise
    return segments


def _load_indexes(seg: Segment, file_size: int) -> bool:
    """Load both index files; True only if they are complete and consistent."""
    if not (seg.offset_index.load(file_size) and seg.time_index.load()):
        return False
    if file_size > 0 and not seg.offset_index.offsets and file_size > 2 * seg.index_interval_bytes:
        return False  # a non-trivial segment with an empty index: rebuild
    for offset, pos in zip(seg.offset_index.offsets, seg.offset_index.positions):
        head = os.pread(seg.fd, MAGIC_OFFSET + 1, pos)
        if len(head) < MAGIC_OFFSET + 1:
            return False
        base, magic = _BASE_MAGIC.unpack(head)
        if magic != MAGIC or base > offset or base < seg.base_offset:
            return False
    return True


def _scan(seg: Segment, start: int, file_size: int) -> tuple[int, str | None]:
    """Verify batches from ``start``; track them; return (valid end, stop reason)."""
    valid_end = start
    expected = seg.next_offset
    try:
        for pos, batch in seg.walk(start, file_size):
            ensure_valid(batch)
            if batch.last_offset_delta < 0 or batch.base_offset < expected:
                raise _offset_error(batch, expected)
            if batch.last_offset - seg.base_offset > MAX_RELATIVE_OFFSET:
                raise _offset_error(batch, expected)
            seg.track(pos, batch.size, batch.last_offset, batch.max_timestamp)
            expected = batch.next_offset
            valid_end = pos + batch.size
    except RecordError as exc:
        return valid_end, str(exc)
    return valid_end, None


def _offset_error(batch, expected: int) -> RecordError:
    return RecordError(f"batch offsets [{batch.base_offset}, {batch.last_offset}] out of order "
                       f"or out of the segment's range (expected base >= {expected})")


def fsync_dir(path: str, fsync) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        fsync(fd)
    finally:
        os.close(fd)


def unlink_segment(seg: Segment) -> None:
    for p in (seg.log_path, seg.offset_index.path, seg.time_index.path):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def drop_segments(path: str, bases: list[int], interval: int, reason: str) -> None:
    """Delete segments that cannot be trusted because an earlier one was cut."""
    for base in bases:
        seg = Segment(path, base, interval)
        size = os.path.getsize(seg.log_path) if os.path.exists(seg.log_path) else 0
        log.warning("storage.recovery.segment_deleted", file=seg.log_path, bytes=size, reason=reason)
        unlink_segment(seg)
