"""The file-handling part of PartitionLog (a mixin over its state): rolls whose files are all
opened before the log changes (roll.py), by an append or by retention rolling an idle log
to an empty segment (``roll_at_end``), and the active segment's write fd, which an idle log
gives back when IDLE_WRITERS is over capacity and the next append opens again.

An open that fails (EMFILE, ENFILE, ENOMEM, ...) fails only the append that needed it, with
a retriable StorageError, and leaves the log exactly as before: fd exhaustion never fails
a log, and the next append after the fds return succeeds.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import structlog

from .errors import StorageError
from .handles import IDLE_WRITERS, is_transient
from .log_fields import LogFields
from .roll import Roll, open_rolls, plan_rolls
from .segment import Segment

log = structlog.get_logger("storage.log")


class LogFiles(LogFields):
    """Mixed into PartitionLog; uses its _segments, _leo, _pending_futures, ... ."""

    def _prepare_files(self, metas: list, total: int) -> dict[int, Roll] | None:
        """Everything an append needs opened before it changes the log: the active segment's
        write fd (given back while idle) and the files of the rolls it needs (or None)."""
        return self._open_for(lambda: plan_rolls(self._segments[-1], self._leo, metas, total, self.segment_bytes))

    def _open_for(self, planner: Callable[[], dict[int, int] | None]) -> dict[int, Roll] | None:
        """Reopen the active segment's write fd if it was given back, then open every file of
        the rolls ``planner`` asks for (roll.py). If an open fails (EMFILE...), a retriable
        StorageError is raised and the log is exactly as before; the next attempt tries again."""
        try:
            if self._segments[-1].fd < 0:
                self._reopen_active()
            plan = planner()
            if plan is None:
                return None
            try:
                opened, dir_fd = open_rolls(self.path, self._segments[-1], plan, self._index_interval,
                                            open_dir=self._dir_fd < 0)
            except OSError as exc:
                raise self._no_files(exc, "roll") from exc
        except StorageError:
            self._list_if_idle()
            raise
        if dir_fd >= 0:
            self._dir_fd = dir_fd
        return opened

    async def roll_at_end(self, base_offset: int | None = None) -> Segment:
        """Roll to a new empty active segment at the log end offset (or at ``base_offset``, beyond it: the
        caller then moves the log end there) and wait until the flush job has finished the old one (its
        index files written and synced, its fd closed, the new file's directory entry synced): retention
        deleting every segment (Kafka's UnifiedLog.deleteSegments). StorageError if the files cannot be
        opened: nothing changed."""
        self._check_writable()
        base = self._leo if base_offset is None else base_offset
        opened = self._open_for(lambda: {0: base})
        assert opened is not None  # the planner always asks for one roll
        if self._idle_listed:
            self._unlist_idle()
        seg = self._install_roll(opened[0])
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._pending_futures.append(done)  # a job with no bytes to write takes the roll
        if self._flush_handle is None and self._inflight is None:
            self._flush_handle = loop.call_soon(self._start_flush)
        await done
        return seg

    def _install_roll(self, roll: Roll) -> Segment:
        old = self._segments[-1]
        old.finalize_time_index()
        self._rolled.append((old, roll.index_fds))
        seg = roll.segment
        self._segments.append(seg)
        self._bases.append(seg.base_offset)
        log.info("storage.segment.rolled", dir=self.path, base_offset=seg.base_offset,
                 previous_size=old.size)
        return seg

    def _awaits_flush(self, seg: Segment) -> bool:
        """Whether `seg` was rolled since the last flush job: its index files belong to the next one."""
        return any(rolled is seg for rolled, _fds in self._rolled)

    def _reopen_active(self) -> None:
        """The active segment's write fd was closed while the log was idle (IDLE_WRITERS)."""
        try:
            self._segments[-1].open_log()
        except OSError as exc:
            raise self._no_files(exc, "reopen") from exc

    def _no_files(self, exc: OSError, what: str) -> StorageError:
        """The retriable error of an append that could not open its files (the warning is
        rate-limited per event name by the server's logging setup)."""
        log.warning(f"storage.segment.{what}_failed", dir=self.path, error=repr(exc),
                    transient=is_transient(exc))
        return StorageError(exc.errno, f"cannot {what} {self.path}: {exc.strerror or exc}")

    def _list_if_idle(self) -> None:
        if (not self._idle_listed and not self._pending_futures and self._inflight is None
                and not self._unsynced and not self._closed and self._failed is None
                and self._segments[-1].fd >= 0):
            self._idle_listed = True
            IDLE_WRITERS.idle(self)

    def _unlist_idle(self) -> None:
        IDLE_WRITERS.busy(self)
        self._idle_listed = False

    def drop_write_fd(self) -> None:
        """Called by IDLE_WRITERS past its capacity: close the active segment's write fd."""
        self._idle_listed = False
        if not self._pending_futures and self._inflight is None and not self._unsynced:
            self._segments[-1].close_log()

    def rename_dir(self, new_path: str) -> None:
        """Rename the partition directory and take every path from the new one (Kafka's
        LocalLog.renameDir): whatever the log still writes by path (the active segment's index
        files at close, a reopened write fd, checkpoints) must never land in a directory later
        created under the old name. OSError if the rename fails; the log is then unchanged."""
        os.rename(self.path, new_path)
        self.moved_to(new_path)

    def moved_to(self, new_path: str) -> None:
        """The directory is now ``new_path`` (or gone): use it for every path from here on."""
        self.path = new_path
        for seg in self._segments:
            seg.moved_to(new_path)
        for seg, _fds in self._rolled:
            if seg not in self._segments:
                seg.moved_to(new_path)

    def _release_fds(self) -> None:
        """Close every fd the log holds (on close or delete; also after a failed flush left
        a roll's index fds unused)."""
        self._unlist_idle()
        rolled, self._rolled = self._rolled, []
        for _seg, index_fds in rolled:
            for fd in index_fds:
                os.close(fd)
        for seg in self._segments:
            seg.close()
        if self._dir_fd >= 0:
            fd, self._dir_fd = self._dir_fd, -1
            os.close(fd)

