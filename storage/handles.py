"""File descriptors on demand, so that many partitions cannot exhaust the process's fds.

* Reads: closed segments hold no fd; readers borrow one from a bounded LRU (``HANDLES``).
* Writes: a log's active segment keeps its write fd while it is written; once a flush
  leaves it idle, it joins ``IDLE_WRITERS``, and past that registry's capacity the least
  recently written idle log closes its fd (the next append opens it again).

A partition's closed (rolled) segments are read rarely, so keeping one fd per segment open
would let many partitions or long logs exhaust the process's fd limit. Readers borrow a
read-only fd for the duration of one read (``with HANDLES.reading(path) as fd``); up to
``capacity`` idle fds stay open for the next read. A borrowed fd is never closed under its
reader (eviction and ``forget`` close it when the last reader returns it), so the cache is
safe to use from worker threads too.

Opening is where fd exhaustion shows up: on EMFILE/ENFILE/ENOMEM the idle fds are closed and
the open tried once more; if it still fails, ``StorageError`` (KAFKA_STORAGE_ERROR, retriable)
reaches the reader and nothing else changes.
"""

from __future__ import annotations

import errno
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from .errors import StorageError

#: Resource exhaustion: the operation may succeed once fds/memory are released. Everything
#: else (EIO, ENOSPC after bytes reached the file, EBADF) is a failure of the log itself.
TRANSIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})

def default_capacity() -> int:
    """An eighth of RLIMIT_NOFILE, between 16 and 128 (the connection cap leaves a quarter
    of the limit to files: coordinator/net/connection_quotas.py)."""
    import resource

    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY:
        return 128
    return max(16, min(128, nofile // 8))


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in TRANSIENT_ERRNOS


class ReadHandles:
    """A thread-safe LRU of read-only fds keyed by path, with per-fd borrow counts."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = default_capacity() if capacity is None else capacity
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, list[int]] = OrderedDict()  # path -> [fd, borrowers]

    def __len__(self) -> int:
        return len(self._entries)

    @contextmanager
    def reading(self, path: str) -> Iterator[int]:
        fd = self.acquire(path)
        try:
            yield fd
        finally:
            self.release(path, fd)

    def acquire(self, path: str) -> int:
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None:
                entry[1] += 1
                self._entries.move_to_end(path)
                return entry[0]
        fd = self._open(path)
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None:  # another thread opened it meanwhile: use one fd
                entry[1] += 1
                os.close(fd)
                return entry[0]
            self._entries[path] = [fd, 1]
            self._evict(self.capacity)
        return fd

    def release(self, path: str, fd: int) -> None:
        with self._lock:
            entry = self._entries.get(path)
            if entry is None or entry[0] != fd:  # forgotten while borrowed: ours to close
                os.close(fd)
                return
            entry[1] -= 1
            self._evict(self.capacity)

    def forget(self, path: str) -> None:
        """The file is going away (segment deleted, log closed): close its idle fd now, a
        borrowed one when it is returned."""
        with self._lock:
            entry = self._entries.pop(path, None)
            if entry is not None and entry[1] == 0:
                os.close(entry[0])

    def close_idle(self) -> None:
        with self._lock:
            self._evict(0)

    def _evict(self, keep: int) -> None:
        """Close least recently used idle fds until at most ``keep`` entries remain (lock held)."""
        if len(self._entries) <= keep:
            return
        for path in [p for p, (_fd, users) in self._entries.items() if users == 0]:
            os.close(self._entries.pop(path)[0])
            if len(self._entries) <= keep:
                return

    def _open(self, path: str) -> int:
        try:
            return os.open(path, os.O_RDONLY)
        except OSError as exc:
            if not is_transient(exc):
                raise
        self.close_idle()  # give our own idle fds back and try once more
        try:
            return os.open(path, os.O_RDONLY)
        except OSError as exc:
            if not is_transient(exc):
                raise
            raise StorageError(exc.errno, f"cannot open {path} for reading: {exc.strerror}") from exc


class _IdleWriter(Protocol):
    def drop_write_fd(self) -> None: ...


class IdleWriters:
    """Logs holding a write fd with nothing to write, least recently written first. Used on
    the event loop thread only (appends and flush completions run there)."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = default_capacity() if capacity is None else capacity
        self._idle: OrderedDict[int, _IdleWriter] = OrderedDict()  # id(log) -> log

    def __len__(self) -> int:
        return len(self._idle)

    def idle(self, log) -> None:
        """`log` has an open write fd and nothing in flight; close the oldest over capacity."""
        self._idle[id(log)] = log
        self._idle.move_to_end(id(log))
        while len(self._idle) > self.capacity:
            _, oldest = self._idle.popitem(last=False)
            oldest.drop_write_fd()

    def busy(self, log) -> None:
        self._idle.pop(id(log), None)


#: Shared by every log of the process.
HANDLES = ReadHandles()
IDLE_WRITERS = IdleWriters()
