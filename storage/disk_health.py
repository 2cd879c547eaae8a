"""Whether writes to a log directory are failing (a full disk, I/O errors): one state per directory,
for the log line and the metrics.

Every PartitionLog reports its failed writes (``failed``) and, cheaply, its successful flushes
(``DirHealth.watch`` is checked on each; only a change does anything). The log lines are
edge-triggered, not one per request: ``storage.dir.write_failing`` when writes to a directory start
failing, ``storage.dir.write_recovered`` with the first successful write ``QUIET_SECONDS`` or more
after the last failure (with the failures in between). A disk that flaps (a small write still fits in a partly
used page of a full tmpfs, the next does not) stays in one episode; a new episode logs a new
``write_failing`` at most once per ``REPEAT_SECONDS`` (the others are counted, not logged). The
counters are read by the metrics endpoint (kcoord_storage_*).
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger("storage.disk")

REPEAT_SECONDS = 60.0
QUIET_SECONDS = 2.0


def error_name(exc: BaseException) -> str:
    """ENOSPC, EIO, ... for an OSError (or the cause of one), else the exception's class name."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno:
            return errno.errorcode.get(seen.errno, str(seen.errno))
        seen = seen.__cause__
    return type(exc).__name__


class DirHealth:
    """One log directory: whether its writes fail now, and what happened so far (metrics).

    ``watch`` is the one attribute a log checks after each successful flush: true while writes fail or
    a recovery is not yet confirmed (``QUIET_SECONDS`` of successful writes without a failure, then
    ``write_recovered`` is logged; a failure before that continues the same episode)."""

    __slots__ = ("path", "failing", "watch", "write_errors", "episodes", "repairs", "_clock", "_since",
                 "_in_episode", "_recovered_at", "_logged_at", "_logged_episode")

    def __init__(self, path: str, clock: Callable[[], float]) -> None:
        self.path = path
        self.failing = False
        self.watch = False
        self.write_errors = 0  # failed flushes and repairs, ever
        self.episodes = 0  # times writes started failing
        self.repairs = 0  # logs taken back to their last good position after a failed write
        self._clock = clock
        self._since = 0.0
        self._in_episode = 0
        self._recovered_at: float | None = None  # the first success after failures, until confirmed
        self._logged_at = -REPEAT_SECONDS
        self._logged_episode = False

    def failed(self, log_dir: str, exc: BaseException) -> None:
        self.write_errors += 1
        self._in_episode += 1
        continuing = self.failing or self._recovered_at is not None
        self.failing = self.watch = True
        self._recovered_at = None
        if continuing:
            return
        self.episodes += 1
        self._since, self._in_episode = self._clock(), 1
        self._logged_episode = self._since - self._logged_at >= REPEAT_SECONDS
        if self._logged_episode:
            self._logged_at = self._since
            log.error("storage.dir.write_failing", dir=self.path, log=log_dir, error=error_name(exc),
                      detail=str(exc), episodes=self.episodes,
                      action="the writes answer retriable errors (Produce KAFKA_STORAGE_ERROR, group writes "
                             "NOT_COORDINATOR) until a write succeeds again; nothing failed is acknowledged")

    def succeeded(self) -> None:
        """A flush with writes succeeded (called only while ``watch``)."""
        now = self._clock()
        if self.failing:
            self.failing = False
            self._recovered_at = now
            return
        if self._recovered_at is not None and now - self._recovered_at >= QUIET_SECONDS:
            self.watch = False
            if self._logged_episode:
                log.warning("storage.dir.write_recovered", dir=self.path, failed_writes=self._in_episode,
                            seconds=round(self._recovered_at - self._since, 3))
            self._recovered_at = None

    def failing_now(self) -> bool:
        """For the gauge: failing, or recovered less than ``QUIET_SECONDS`` ago (a flapping disk reads 1)."""
        if self.failing:
            return True
        return self._recovered_at is not None and self._clock() - self._recovered_at < QUIET_SECONDS

    def repaired(self) -> None:
        self.repairs += 1


class DiskHealth:
    """The DirHealth of every log directory of the process (the parent of each partition directory)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.dirs: dict[str, DirHealth] = {}

    def dir_of(self, partition_path: str) -> DirHealth:
        root = os.path.dirname(os.path.abspath(partition_path))
        health = self.dirs.get(root)
        if health is None:
            health = self.dirs[root] = DirHealth(root, self.clock)
        return health


#: Shared by every log of the process.
HEALTH = DiskHealth()
