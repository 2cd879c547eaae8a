"""The group-commit flush job: what runs in a worker thread, off the event loop.

The event loop builds a ``FlushJob`` from everything appended since the last flush
(one turn's worth, or more if the previous fsync was still running) and hands it to
a worker thread. The job writes the log bytes with one ``pwritev`` per segment,
writes the new index entries, fsyncs what the policy asks for, and returns. Only
then does the loop resolve the appenders' futures. Positions are assigned by the
loop at append time, so the worker never decides anything; at most one job per
log is in flight, which keeps writes in order without locks.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

_IOV_MAX = 1024  # Linux limit on buffers per pwritev

#: Shared by all logs: fsync is I/O-bound, so a few threads serve many partitions
#: (each log keeps at most one job in flight).
_default_executor: ThreadPoolExecutor | None = None


def default_executor() -> ThreadPoolExecutor:
    global _default_executor
    if _default_executor is None:
        _default_executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="storage-flush")
    return _default_executor


@dataclass
class FlushJob:
    writes: list = field(default_factory=list)  # (fd, position, [buffers])
    index_writes: list = field(default_factory=list)  # (fd, position, bytes)
    fsync_fds: list = field(default_factory=list)  # log files to fsync
    finalize_fds: list = field(default_factory=list)  # rolled index files: fsync + close
    close_fds: list = field(default_factory=list)  # rolled .log files: close when written and synced
    dir_fd: int = -1  # the directory to fsync (a segment file was created); closed by the job
    ends: list = field(default_factory=list)  # (segment, end position) after the job
    end_offset: int = 0
    futures: list = field(default_factory=list)
    synced: bool = False  # did the job fsync the active segment

    def writes_only(self) -> bool:
        """Nothing to sync, close or finish (flush policy none, no roll): page-cache writes only."""
        return not (self.index_writes or self.fsync_fds or self.finalize_fds or self.close_fds or self.dir_fd >= 0)


def pwrite_all(fd: int, buffers: list, position: int) -> None:
    """Write every buffer at ``position``, retrying short writes."""
    if len(buffers) > _IOV_MAX:
        buffers = [b"".join(buffers)]
    total = sum(len(b) for b in buffers)
    n = os.pwritev(fd, buffers, position) if len(buffers) > 1 else os.pwrite(fd, buffers[0], position)
    if n < total:  # short write (disk nearly full, signals): finish byte-wise
        rest = memoryview(b"".join(buffers))[n:]
        position += n
        while rest:
            k = os.pwrite(fd, rest, position)
            if k <= 0:
                raise OSError(f"pwrite wrote {k} bytes")
            rest, position = rest[k:], position + k


def run_job(job: FlushJob, fsync, data_sync=None) -> None:
    """Executed in a worker thread. Any exception fails every future of the job. The log
    segments written are synced with `data_sync` (default `fsync`), the rest with `fsync`.

    The job opens nothing: every fd it needs was opened on the loop (a roll opens its files
    before it changes the log), so running out of fds can never fail a flush half-way. It
    closes the fds handed over to it, whether it succeeds or not."""
    try:
        for fd, position, buffers in job.writes:
            pwrite_all(fd, buffers, position)
        for fd, position, data in job.index_writes:
            pwrite_all(fd, [data], position)
        sync_data = data_sync or fsync
        for fd in job.fsync_fds:
            sync_data(fd)
        for fd in job.finalize_fds:
            fsync(fd)
        if job.dir_fd >= 0:
            fsync(job.dir_fd)
    finally:
        for fd in job.finalize_fds + job.close_fds + ([job.dir_fd] if job.dir_fd >= 0 else []):
            os.close(fd)


def start_job(executor, job: FlushJob, fsync, data_sync, inline: bool) -> asyncio.Future[None]:
    """`run_job` in `executor`'s worker thread, or at once on the loop when `inline` (the log's flush policy none
    and nothing to fsync: pwrite(v) into the page cache without the worker thread's round trip, a submit and a
    wake-up of the loop per flush: ~400 us p50 of a 1x1 commit before, issue 32). Returns its future."""
    loop = asyncio.get_running_loop()
    if not inline:
        return loop.run_in_executor(executor, run_job, job, fsync, data_sync)
    done = loop.create_future()
    try:
        run_job(job, fsync, data_sync)
        done.set_result(None)
    except Exception as exc:
        done.set_exception(exc)
    return done
