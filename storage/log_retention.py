"""The log start offset of a PartitionLog and the deletion of its oldest segments.

A mixin of ``storage.log.PartitionLog`` (kept apart so log.py keeps one job: appends,
flushes and reads). Kafka's UnifiedLog rules:

* ``advance_log_start`` (DeleteRecords): the log start offset only moves forward and never
  past the high watermark; reads below it answer OFFSET_OUT_OF_RANGE at once.
  ``checkpoint_log_start`` then makes it durable (``storage/log_start.py``) before the
  caller acknowledges it.
* ``delete_oldest`` (retention, ``storage/retention_rules.py`` decides how many): the segments
  leave the in-memory list on the event loop, so no read sees them any more; the log start
  offset becomes the new first segment's base offset; their files are closed and removed
  in a worker thread once no flush job can still hold their descriptors. A crash before
  the removal leaves the files, and the next retention check deletes them again. When
  every segment goes (the active one too, as Kafka's UnifiedLog.deleteSegments), the log
  first rolls to an empty segment at the log end offset (``roll_at_end``, log_files.py),
  so the log start offset becomes the log end offset and the next append continues there;
  a restart finds that empty segment (or, before the old files went, the checkpoint).
"""

from __future__ import annotations

import asyncio
import os
import time

import structlog

from . import log_start as log_start_checkpoint
from .errors import LogClosedError, OffsetOutOfRangeError
from .log_fields import LogFields
from .retention_rules import SegmentInfo
from .segment import Segment

log = structlog.get_logger(__name__)


class LogStartMixin(LogFields):
    """Needs PartitionLog's ``path``, ``_segments``, ``_bases``, ``_awaits_flush``, ``roll_at_end``,
    ``_inflight``, ``_hw``, ``_leo``, ``_closed``, ``_failed``, ``_fsync``, ``_executor``,
    ``_log_start``, ``_checkpointed_start`` and ``_checkpoint_lock``."""

    def _restore_log_start(self, checkpointed: int | None) -> None:
        """Log start offset = max(checkpoint, first base offset), as Kafka's LogLoader."""
        if checkpointed is None or checkpointed <= self._log_start:
            return
        if checkpointed > self._leo:  # only after losing unsynced data (flush policy none + power cut)
            log.warning("storage.log_start.beyond_end", dir=self.path, checkpoint=checkpointed,
                        log_end_offset=self._leo)
            checkpointed = self._leo
        self._log_start = self._checkpointed_start = checkpointed

    def advance_log_start(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` (never back); returns the new log start offset.

        OffsetOutOfRangeError if ``offset`` is negative or above the high watermark (Kafka's
        UnifiedLog.maybeIncrementLogStartOffset)."""
        if self._closed:
            raise LogClosedError(f"log {self.path} is closed")
        if offset < 0 or offset > self._hw:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition {os.path.basename(self.path)} "
                f"since it is larger than the high watermark {self._hw}")
        if offset > self._log_start:
            self._log_start = offset
            log.info("storage.log_start.advanced", dir=self.path, log_start_offset=offset)
        return self._log_start

    async def start_empty_at(self, offset: int) -> None:
        """Make a log that holds no record continue at ``offset`` (beyond its end), as Kafka's
        truncateFullyAndStartAt: a new empty segment there, log start = log end = ``offset`` (made
        durable first), then the old empty segments deleted. For a partition whose state up to
        ``offset`` a bulk-load snapshot holds (coordinator/runtime/loader.py). A crash half way
        leaves either the old log (the snapshot is then used the same way) or the new segment, whose
        base offset is the log end again on open."""
        if offset <= self._leo:
            return
        if self._log_start != self._leo or self._hw != self._leo:
            raise ValueError(f"log {self.path} holds records [{self._log_start}, {self._leo}): cannot start it anew")
        await self.roll_at_end(offset)
        self._leo = self._hw = self._log_start = offset
        await self.checkpoint_log_start()
        await self.delete_oldest(len(self._segments) - 1, self._executor)
        log.info("storage.log.started_at", dir=self.path, log_start_offset=offset)

    async def checkpoint_log_start(self) -> None:
        """Make the current log start offset durable (a no-op if it already is)."""
        if self._checkpoint_lock is None:
            self._checkpoint_lock = asyncio.Lock()
        async with self._checkpoint_lock:
            value = self._log_start
            if value <= self._checkpointed_start:
                return
            await asyncio.get_running_loop().run_in_executor(
                self._executor, log_start_checkpoint.write, self.path, value, self._fsync)
            self._checkpointed_start = max(self._checkpointed_start, value)

    def segment_infos(self) -> list[SegmentInfo]:
        """What retention decides on: every segment, oldest first (the last is the active one)."""
        out = []
        last = self._segments[-1]
        for seg in self._segments:
            largest = seg.max_timestamp
            if largest < 0 and (seg.size > 0 or seg is not last):  # Kafka: the file's last-modified time
                try:
                    largest = int(os.stat(seg.log_path).st_mtime * 1000)
                except OSError:
                    largest = int(time.time() * 1000)
            out.append(SegmentInfo(seg.base_offset, seg.size, largest))
        return out

    def _deletable(self, count: int) -> int:
        """How many of the oldest ``count`` segments may go now: all below the high watermark
        (the active one: up to the log end offset, and only if it is not empty and the log has
        not failed), none whose index files still belong to the next flush job (a just-rolled
        segment)."""
        segments = self._segments
        n = 0
        for i, seg in enumerate(segments[:count]):
            active = i == len(segments) - 1
            upper = self._leo if active else segments[i + 1].base_offset
            if (self._closed or self._awaits_flush(seg) or upper > self._hw
                    or active and (seg.size == 0 or self._failed is not None)):
                break
            n += 1
        return n

    async def delete_oldest(self, count: int, executor) -> int:
        """Delete up to ``count`` of the oldest segments (whole ones, all below the high
        watermark); returns how many were deleted. Deleting them all rolls the log first to a
        new empty segment at the log end offset, which becomes the log start offset (a
        StorageError if that roll cannot open its files: nothing is deleted). File work runs
        on ``executor``."""
        n = self._deletable(count)
        if n == 0:
            return 0
        if n == len(self._segments):
            new = await self.roll_at_end()
            if self._closed or len(self._segments) <= n or self._segments[n] is not new:
                return 0  # closed, deleted or truncated while the roll was flushed
        doomed = self._segments[:n]
        del self._segments[:n], self._bases[:n]
        self._log_start = max(self._log_start, self._segments[0].base_offset)
        try:
            # Durable first: files a crash or an unlink error leaves behind are below the log start
            # offset after a restart, so the next check deletes them (log start offset breach).
            await self.checkpoint_log_start()
        finally:
            inflight = self._inflight
            if inflight is not None:  # a running flush job may still fsync a doomed segment's fd
                await asyncio.wait([inflight])
            dir_fd = _open_dir(self.path, doomed)
            if dir_fd >= 0:
                await asyncio.get_running_loop().run_in_executor(executor, _remove, dir_fd, doomed, self._fsync)
        return n


def _open_dir(path: str, segments: list[Segment]) -> int:
    """The partition directory's fd, opened on the loop, where a topic deletion renames it: the
    unlinks go through it, so they follow that rename and can never hit a directory created
    under the old name meanwhile. -1 if it is gone (the topic was deleted: the files went with
    it); an OSError (say EMFILE) after closing the segments' fds, leaving their files for the
    check after the next start (they are below the log start offset)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        for seg in segments:
            seg.close()
        if isinstance(exc, FileNotFoundError):
            return -1
        raise


def _remove(dir_fd: int, segments: list[Segment], fsync) -> None:
    """Close every segment's files, then unlink them relative to ``dir_fd`` and fsync it (the
    first error is raised after trying all); closes ``dir_fd``."""
    errors: list[OSError] = []
    try:
        for seg in segments:
            seg.close()
        for seg in segments:
            try:
                unlink_segment(seg, dir_fd)
            except OSError as exc:
                errors.append(exc)
        fsync(dir_fd)
    finally:
        os.close(dir_fd)
    if errors:
        raise errors[0]


def unlink_segment(seg: Segment, dir_fd: int) -> None:
    for path in (seg.log_path, seg.offset_index.path, seg.time_index.path):
        try:
            os.unlink(os.path.basename(path), dir_fd=dir_fd)
        except FileNotFoundError:
            pass
