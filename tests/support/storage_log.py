"""Helpers for tests of PartitionLog and its files: records to append, reading a log back, the
files of a log directory, and the file descriptors the process holds on them."""

from __future__ import annotations

import asyncio
import errno
import os

import storage.flush
from storage.batch import decode_records, ensure_valid, iter_batches
from storage.log import PartitionLog


def rec(i: int, size: int = 100):
    return (b"k%06d" % i, b"v" * size, 1_000 + i)


def read_all(lg: PartitionLog, start: int = 0) -> list:
    out, off = [], start
    while off < lg.high_watermark:
        data = lg.read(off, 64 * 1024)
        assert data, f"no data at {off}"
        for b in iter_batches(data):
            ensure_valid(b)
            out.extend(r for r in decode_records(b) if r.offset >= off)
        off = out[-1].offset + 1
    return out


async def fill(lg: PartitionLog, n: int, per_batch: int = 1, size: int = 100) -> None:
    results = [lg.append_records([rec(i + j, size) for j in range(per_batch)])
               for i in range(lg.log_end_offset, lg.log_end_offset + n * per_batch, per_batch)]
    await asyncio.gather(*results)


def files(path, ext):
    return sorted(f for f in os.listdir(path) if f.endswith(ext))


class Emfile:
    """os.open fails with EMFILE for paths under `root` whose name passes `match`, while armed."""

    def __init__(self, monkeypatch, root: str, match=lambda name: True) -> None:
        self.root, self.match, self.armed, self.hits = root, match, False, 0
        real = os.open

        def fake_open(file, flags, mode=0o777, *, dir_fd=None):
            name = os.fspath(file)
            if self.armed and name.startswith(self.root) and self.match(name):
                self.hits += 1
                raise OSError(errno.EMFILE, "Too many open files", name)
            return real(file, flags, mode, dir_fd=dir_fd)

        monkeypatch.setattr(os, "open", fake_open)


def fds_under(root: str) -> list[str]:
    """The files under `root` this process holds open."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(root):
            out.append(target)
    return sorted(out)


def log_bytes(log_dir: str, topic: str) -> int:
    total = 0
    for entry in os.scandir(os.path.join(log_dir, f"{topic}-0")):
        if entry.name.endswith(".log"):
            try:
                total += entry.stat().st_size
            except FileNotFoundError:  # deleted by retention while we looked
                pass
    return total


class Disk:
    """Injected failures: `full` makes every write stop half-way with ENOSPC (a torn write), `fsync_fails`
    makes every fsync fail with EIO (after the write reached the page cache)."""

    def __init__(self, monkeypatch) -> None:
        self.full = False
        self.fsync_fails = False
        self.writes = 0
        real = storage.flush.pwrite_all

        def pwrite_all(fd, buffers, position):
            if not self.full:
                return real(fd, buffers, position)
            data = b"".join(buffers)
            os.pwrite(fd, data[:max(1, len(data) // 2)], position)  # part of it lands
            raise OSError(errno.ENOSPC, "No space left on device (injected)")

        monkeypatch.setattr(storage.flush, "pwrite_all", pwrite_all)

    def fsync(self, fd: int) -> None:
        if self.fsync_fails:
            raise OSError(errno.EIO, "Input/output error (injected)")
        os.fsync(fd)


async def writable(lg: PartitionLog, timeout: float = 5.0) -> None:
    """Until the log takes appends again (its repair ran)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while lg._failed is not None:
        assert asyncio.get_running_loop().time() < deadline, "the log was not repaired"
        await asyncio.sleep(0.01)
