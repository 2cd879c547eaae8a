"""After a failed write or fsync, a PartitionLog goes back to its last good position and writes again:
no restart, and nothing half-written is ever read or replayed.

A flush job that fails (ENOSPC, EIO, a failed fsync) fails every append waiting for it (and the
ones after it) with StorageError; appends are refused from then on (``_failed``) while the log is
repaired, in the background:

1. The segments created by rolls since the last successful flush (``Segment.settled`` is false:
   their directory entry was never made durable) are closed and removed.
2. The last remaining segment's .log is cut to its ``durable_size`` -- the end of the last
   successful flush: under the fsync policy the last fsync'ed byte, so the bytes of unknown state
   after a failed fsync (the page cache may hold what the disk does not) are dropped, not trusted --
   and fsync'ed (on the flush executor). Its index files are emptied: they are written whole at its
   roll or close (and rebuilt by recovery after a crash).
3. Its bookkeeping goes back to that end (``recovery.resume_segment``: the in-memory index entries
   below it are kept and at most one index interval is scanned again), the log end offset becomes
   the high watermark, and appends are taken again. ``on_repaired`` callbacks run then (the data
   plane rebuilds the partition's producer state from the log).

If the repair itself fails (the disk is still failing), it is tried again every ``RETRY_SECONDS``.
Under the ``none`` flush policy the acknowledged bytes were written but not yet fsync'ed: they
are kept (readers may have seen them), and the fsync after the cut covers them.

Failures and recoveries are told to the directory's ``disk_health.DirHealth`` (one log line per
episode, metrics). A log opened with ``self_repair=False`` (cluster mode's replica, whose owner
reopens it from PostgreSQL) stays failed as before.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import structlog

from .disk_health import DirHealth
from .errors import StorageError
from .log_fields import LogFields
from .log_retention import unlink_segment
from .recovery import resume_segment
from .segment import Segment

log = structlog.get_logger("storage.log")

RETRY_SECONDS = 1.0


class RepairMixin(LogFields):
    """Mixed into PartitionLog; uses its _segments, _leo, _hw, _failed, ... ."""

    _health: DirHealth
    _self_repair: bool
    _repairing: asyncio.Future | None
    _repair_timer: asyncio.TimerHandle | None
    on_repaired: list[Callable[[], None]]

    def _write_failed(self, futures: list[asyncio.Future], exc: BaseException) -> None:
        """A flush job failed: fail its appends and every later one, refuse appends, repair."""
        err = StorageError(f"flush of {self.path} failed: {exc!r}")
        err.__cause__ = exc
        self._failed = err
        for fut in futures + self._pending_futures:
            if not fut.done():
                fut.set_exception(err)
        self._pending, self._pending_futures = [], []
        rolled, self._rolled = self._rolled, []  # rolls no job took: their index fds are unused
        for _seg, fds in rolled:
            for fd in fds:
                os.close(fd)
        if self._dir_fd >= 0:
            fd, self._dir_fd = self._dir_fd, -1
            os.close(fd)
        self._health.failed(self.path, exc)
        log.debug("storage.flush.failed", dir=self.path, error=repr(exc))
        if self._self_repair:
            self._schedule_repair(0)

    def _schedule_repair(self, delay: float) -> None:
        if not self._closed and self._repair_timer is None:
            self._repair_timer = asyncio.get_running_loop().call_later(delay, self._start_repair)

    def _start_repair(self) -> None:
        self._repair_timer = None
        if self._closed or self._failed is None or self._repairing is not None:
            return
        self._repairing = asyncio.ensure_future(self._repair())

    def _cancel_repair(self) -> None:
        if self._repair_timer is not None:
            self._repair_timer.cancel()
            self._repair_timer = None

    async def _repair_before_close(self) -> None:
        """Closing: let a repair in flight end; a failed log not yet repaired gets one more attempt."""
        self._cancel_repair()
        if self._repairing is not None:
            await asyncio.wait([self._repairing])
        if self._failed is not None and self._self_repair and not self._closed:
            self._repairing = repairing = asyncio.ensure_future(self._repair())
            await asyncio.wait([repairing])
            self._cancel_repair()  # a failed attempt scheduled another: closing, there is none

    async def _repair(self) -> None:
        try:
            await self._cut_to_durable()
        except Exception as exc:  # the disk still fails: try again later
            self._health.failed(self.path, exc)
            log.debug("storage.log.repair_failed", dir=self.path, error=repr(exc))
            self._schedule_repair(RETRY_SECONDS)
        finally:
            self._repairing = None

    async def _cut_to_durable(self) -> None:
        segments = self._segments
        keep = next((i for i, seg in enumerate(segments) if not seg.settled), len(segments))
        keep = max(keep, 1)
        last, dropped = segments[keep - 1], segments[keep:]
        for seg in dropped:
            seg.close()
        last.close()  # reads borrow an fd from handles.HANDLES meanwhile
        end = last.durable_size
        dir_fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        fd = await asyncio.get_running_loop().run_in_executor(
            self._executor, _cut_files, dir_fd, last, end, dropped, self._fsync)
        if self._closed or last not in self._segments:  # closed, or replaced meanwhile: nothing to resume
            os.close(fd)
            if not self._closed:
                raise StorageError(f"segment {last.log_path} was replaced during its repair")
            return
        last.fd = fd
        at = self._segments.index(last)
        del self._segments[at + 1:], self._bases[at + 1:]
        cut = resume_segment(last, end)
        old_hw = self._hw
        self._leo = last.next_offset
        if self._leo != old_hw or cut is not None:
            log.error("storage.log.repair_moved_end", dir=self.path, high_watermark=old_hw,
                      log_end_offset=self._leo, cut=None if cut is None else cut.reason)
        self._hw = min(old_hw, self._leo)
        self._unsynced = False
        self._failed = None
        self._health.repaired()
        log.info("storage.log.repaired", dir=self.path, log_end_offset=self._leo, segments_removed=len(dropped))
        self._list_if_idle()
        for callback in list(self.on_repaired):
            try:
                callback()
            except Exception:
                log.exception("storage.log.on_repaired_failed", dir=self.path)


def _cut_files(dir_fd: int, last: Segment, end: int, dropped: list[Segment], fsync) -> int:
    """On the flush executor: remove ``dropped``, cut ``last`` to ``end`` and empty its index files,
    fsync; returns a write fd of ``last``'s .log. Every name is taken relative to ``dir_fd`` (opened on
    the loop), so a rename of the partition directory meanwhile (a topic's deletion) is followed and a
    directory created under the old name is never touched. Closes ``dir_fd``."""
    fd = -1
    try:
        for seg in dropped:
            unlink_segment(seg, dir_fd)
        fd = os.open(os.path.basename(last.log_path), os.O_RDWR, dir_fd=dir_fd)
        if os.fstat(fd).st_size > end:  # shorter: the scan after finds (and logs) what is missing
            os.ftruncate(fd, end)
        fsync(fd)
        for index_path in (last.offset_index.path, last.time_index.path):
            try:
                os.close(os.open(os.path.basename(index_path), os.O_WRONLY | os.O_TRUNC, dir_fd=dir_fd))
            except FileNotFoundError:
                pass
        if dropped:
            fsync(dir_fd)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    finally:
        os.close(dir_fd)
    return fd
