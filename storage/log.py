"""A segmented, append-only log for one partition, in Kafka's directory layout.

``<dir>/<topic>-<partition>/<20-digit base offset>.log`` (+ ``.index``, ``.timeindex``).

Appends are synchronous bookkeeping (offsets and file positions are assigned at once) plus a future that resolves when
the bytes are durable. All appends made in one event-loop turn are written with one write and covered by one fsync,
run in a worker thread (see ``flush.py``; with flush policy none and nothing to fsync, on the loop); appends arriving
while that fsync runs form the next group. Readers see data up to the high watermark (= durable end).

Flush policies:

* ``fsync`` (default, for the offsets log): every flush is fsync'ed before its
  futures resolve. An acknowledged append survives a machine crash.
* ``none``: the flush writes to the OS (surviving a process crash) and resolves; an
  fsync runs at most every ``flush_interval_ms`` (and on roll and close).

After a write/fsync failure the log fails every waiting future with StorageError and refuses appends until it has cut
itself back to the end of its last successful flush (log_repair.py: bytes whose write or fsync failed are of unknown
state, never trusted). Segments are fsync'ed with their indexes when rolled.

Running out of file descriptors (or memory for a new file) is not such a failure: a roll opens every file it needs
(new .log, the old segment's index files, the directory) before it changes anything, so an EMFILE fails only the
append that needed the roll, with a retriable StorageError, and the next append tries again; the flush job itself
opens nothing. The log holds at most one fd, its active segment's .log, and gives it back while idle when many logs
are open (``handles.IDLE_WRITERS``); rolled segments are read through fds borrowed from ``handles.HANDLES`` (see
log_files.py).
"""

from __future__ import annotations

import asyncio
import bisect
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import NamedTuple

import structlog

from . import log_start as log_start_checkpoint
from .batch import assign_offsets, build_batch, scan_for_append
from .disk_health import HEALTH
from .errors import LogClosedError, OffsetOutOfRangeError, RecordTooLargeError, StorageError  # noqa: F401 (re-export)
from .flush import FlushJob, default_executor, start_job
from .log_compaction import CompactionMixin
from .log_dirs import partition_dir_name
from .log_files import LogFiles
from .log_repair import RepairMixin
from .log_replica import ReplicaMixin
from .log_retention import LogStartMixin
from .log_timestamps import TimestampReadsMixin
from .recovery import fsync_dir, open_all, open_segment, unlink_segment
from .segment import Segment

log = structlog.get_logger(__name__)

DEFAULT_SEGMENT_BYTES = 1 << 30
DEFAULT_INDEX_INTERVAL_BYTES = 4096


class FlushPolicy(str, Enum):
    FSYNC = "fsync"
    NONE = "none"


class AppendResult(NamedTuple):
    """Offsets assigned to an append; ``await result`` waits until it is durable.

    A NamedTuple rather than a frozen dataclass: it is created once per append on the
    OffsetCommit hot path, and tuple construction is several times cheaper.
    """

    base_offset: int
    last_offset: int
    durable: asyncio.Future

    def __await__(self):
        return self.durable.__await__()


def partition_dir(root: str, topic: str, partition: int) -> str:
    return os.path.join(root, partition_dir_name(topic, partition))


class PartitionLog(LogStartMixin, CompactionMixin, ReplicaMixin, RepairMixin, TimestampReadsMixin, LogFiles):
    """Use ``PartitionLog.open``; see the module docstring for the guarantees."""

    def __init__(self, path: str, segments: list[Segment], *, segment_bytes: int,
                 flush_policy: FlushPolicy | str, flush_interval_ms: int, index_interval_bytes: int,
                 fsync, executor, data_sync=None, self_repair: bool = True) -> None:
        self.path = path
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self.segment_bytes = segment_bytes
        self.flush_policy = FlushPolicy(flush_policy)
        self._interval_s = flush_interval_ms / 1000.0
        self._index_interval = index_interval_bytes
        self._fsync = fsync
        self._data_sync = data_sync or fsync
        self._executor = executor or default_executor()
        self._leo = self._hw = segments[-1].next_offset
        self._log_start = self._checkpointed_start = segments[0].base_offset
        self._checkpoint_lock: asyncio.Lock | None = None
        self._pending: list[list] = []  # [segment, position, [buffers]]
        self._pending_futures: list[asyncio.Future] = []
        self._rolled: list[tuple[Segment, tuple[int, int]]] = []  # (segment, its index fds)
        self._dir_fd = -1  # opened by a roll; the next flush job fsyncs and closes it
        self._idle_listed = False  # in IDLE_WRITERS: may lose its write fd until the next append
        self._flush_handle: asyncio.Handle | None = None
        self._inflight: asyncio.Future | None = None
        self._failed: StorageError | None = None
        self._closed = False
        self._last_sync = time.monotonic()
        self._unsynced = False
        self._sync_timer: asyncio.TimerHandle | None = None
        self._health = HEALTH.dir_of(path)
        self._self_repair = self_repair
        self._repairing: asyncio.Future | None = None
        self._repair_timer: asyncio.TimerHandle | None = None
        self.on_repaired: list = []  # called once a repair made the log writable again (log_repair.py)
        self._list_if_idle()

    # ------------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: str, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
             flush_policy: FlushPolicy | str = FlushPolicy.FSYNC, flush_interval_ms: int = 1000,
             index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, fsync=os.fsync,
             executor=None, self_repair: bool = True) -> PartitionLog:
        """Open (creating if needed) and recover the partition directory ``path``.

        ``fsync`` and ``executor`` are injectable for tests and benchmarks. A flush makes
        its appended bytes durable with ``os.fdatasync`` (the data and the file size that
        reaches it, without the timestamps fsync also writes: 298 vs 346 µs p50 for a
        200-byte append + sync on the benchmark VM) unless ``fsync`` is injected, which then
        does every sync (tests inject one to fail or count them). Rolled index files,
        directories and recovery use ``fsync``. ``self_repair=False``: a failed write leaves the
        log failed until its owner reopens it (cluster mode's replica), instead of log_repair.py.
        """
        return cls.open_many([path], segment_bytes=segment_bytes, flush_policy=flush_policy,
                             flush_interval_ms=flush_interval_ms, index_interval_bytes=index_interval_bytes,
                             fsync=fsync, executor=executor, self_repair=self_repair)[0]

    @classmethod
    def open_many(cls, paths: Sequence[str], *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                  flush_policy: FlushPolicy | str = FlushPolicy.FSYNC, flush_interval_ms: int = 1000,
                  index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, fsync=os.fsync,
                  executor=None, self_repair: bool = True) -> list[PartitionLog]:
        """``open`` of each of ``paths``, their directories created or recovered concurrently (recovery.open_all:
        a start's tens of partitions fsynced their directories and index files one after the other)."""
        logs = []
        for path, segments in zip(paths, open_all(paths, index_interval_bytes, fsync), strict=True):
            log_ = cls(path, segments, segment_bytes=segment_bytes, flush_policy=flush_policy,
                       flush_interval_ms=flush_interval_ms, index_interval_bytes=index_interval_bytes,
                       fsync=fsync, executor=executor, data_sync=os.fdatasync if fsync is os.fsync else fsync,
                       self_repair=self_repair)
            log_._restore_log_start(log_start_checkpoint.read(path))
            logs.append(log_)
        return logs

    # --------------------------------------------------------------- properties
    @property
    def log_start_offset(self) -> int:
        """First readable offset: the first segment's base, or above it after DeleteRecords."""
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        """Next offset to be assigned (includes appends not yet durable)."""
        return self._leo

    @property
    def high_watermark(self) -> int:
        """End of the durable data: offsets below it are readable and acknowledged."""
        return self._hw

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(self._segments)

    @property
    def flushing(self) -> bool:
        """Appends wait for a flush, or one is running: the files are not at rest."""
        return bool(self._pending_futures) or self._inflight is not None

    @property
    def failed(self) -> StorageError | None:
        """The error of a failed write while the log waits for its repair (log_repair.py), else None."""
        return self._failed

    # ------------------------------------------------------------------ appends
    def append(self, data: bytes | bytearray | memoryview, *,
               partition_leader_epoch: int | None = None, flush_now: bool = False) -> AppendResult:
        """Append one or more v2 batches, assigning offsets from the log end offset.

        The batches are checked (length, magic, CRC) before anything changes: bad input raises a RecordError and
        leaves the log untouched. On the event loop thread. The flush starts on the next loop turn, so that the
        turn's appends share it, or at once with `flush_now` (a caller that gathered its turn's appends itself: the
        offsets log; with flush policy none and nothing to fsync the result is then durable on return)."""
        self._check_writable()
        loop = asyncio.get_running_loop()
        buf = bytearray(data)
        metas = scan_for_append(buf, self.segment_bytes)
        seg = self._segments[-1]
        if self._idle_listed:
            self._unlist_idle()
        rolls = None
        if seg.fd < 0 or len(metas) > 1 or not seg.fits(metas[0][1], self._leo + metas[0][2], self.segment_bytes):
            rolls = self._prepare_files(metas, len(buf))  # may raise StorageError: nothing changed
        first = self._leo
        mv = memoryview(buf)
        i = 0
        for position, size, delta, max_ts in metas:
            base = self._leo
            assign_offsets(buf, base, position=position, partition_leader_epoch=partition_leader_epoch)
            last = base + delta
            if rolls is not None and i in rolls:
                seg = self._install_roll(rolls[i])
            i += 1
            seg_pos = seg.size
            seg.track(seg_pos, size, last, max_ts)
            chunk = mv[position:position + size]
            tail = self._pending[-1] if self._pending else None
            if tail is not None and tail[0] is seg:
                tail[2].append(chunk)
            else:
                self._pending.append([seg, seg_pos, [chunk]])
            self._leo = last + 1
        fut = loop.create_future()
        self._pending_futures.append(fut)
        if self._flush_handle is None and self._inflight is None:
            if flush_now:
                self._start_flush()
            else:
                self._flush_handle = loop.call_soon(self._start_flush)
        return AppendResult(first, self._leo - 1, fut)

    def append_records(self, records: Iterable, **batch_args) -> AppendResult:
        """Encode ``records`` (see ``build_batch``) as one batch and append it."""
        return self.append(build_batch(records, **batch_args))

    def _check_writable(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self.path} is closed")
        if self._failed is not None:
            raise StorageError(f"log {self.path} failed earlier and is not yet repaired: {self._failed}")

    # ---------------------------------------------------------------- flushing
    def _start_flush(self) -> None:
        self._flush_handle = None
        if self._inflight is not None or self._closed and not self._pending_futures or self._failed is not None:
            return  # a failed log writes nothing until its repair (log_repair.py) is done
        if not self._pending_futures and not self._sync_due():
            return
        job = self._make_job()
        inline = self.flush_policy is FlushPolicy.NONE and job.writes_only()
        self._inflight = start_job(self._executor, job, self._fsync, self._data_sync, inline)
        if inline:  # settled already
            return self._on_flushed(job, self._inflight)
        self._inflight.add_done_callback(lambda f: self._on_flushed(job, f))

    def _sync_due(self) -> bool:
        return self._unsynced and time.monotonic() - self._last_sync >= self._interval_s

    def _make_job(self) -> FlushJob:
        job = FlushJob(end_offset=self._leo, futures=self._pending_futures)
        touched: list[Segment] = []
        for seg, position, buffers in self._pending:
            job.writes.append((seg.fd, position, buffers))
            if seg not in touched:
                touched.append(seg)
        for seg, _fds in self._rolled:
            if seg not in touched:
                touched.append(seg)
        active = self._segments[-1]
        for seg in touched + ([active] if active not in touched else []):
            job.ends.append((seg, seg.size))
        sync_active = self.flush_policy is FlushPolicy.FSYNC or self._sync_due() or self._closed
        for seg in touched:
            if seg is not active or sync_active:
                job.fsync_fds.append(seg.fd)
        if active not in touched and sync_active and self._unsynced:
            job.fsync_fds.append(active.fd)
        job.synced = sync_active
        for seg, index_fds in self._rolled:  # the job owns (writes, syncs and closes) these fds now
            job.index_writes.extend(seg.take_index_writes(index_fds))
            job.finalize_fds += index_fds
            job.close_fds.append(seg.fd)
            seg.fd = -1  # reads borrow an fd from now on
        job.dir_fd, self._dir_fd = self._dir_fd, -1
        self._pending, self._pending_futures, self._rolled = [], [], []
        return job

    def _on_flushed(self, job: FlushJob, done: asyncio.Future) -> None:
        self._inflight = None
        exc = done.exception() if not done.cancelled() else asyncio.CancelledError()
        if exc is not None:
            self._write_failed(job.futures, exc)
            return
        for seg, end in job.ends:
            seg.written_size = seg.durable_size = max(seg.durable_size, end)
            seg.settled = True
        if self._health.watch and job.writes:
            self._health.succeeded()
        self._hw = max(self._hw, job.end_offset)
        if job.synced:
            self._last_sync, self._unsynced = time.monotonic(), False
        elif job.writes:
            self._unsynced = True
            self._arm_sync_timer()
        for fut in job.futures:
            if not fut.done():
                fut.set_result(None)
        if self._pending_futures:
            self._start_flush()
        else:
            self._list_if_idle()

    def _arm_sync_timer(self) -> None:
        if self._sync_timer is None and not self._closed:
            loop = asyncio.get_running_loop()
            self._sync_timer = loop.call_later(self._interval_s, self._on_sync_timer)

    def _on_sync_timer(self) -> None:
        self._sync_timer = None
        if self._unsynced and self._flush_handle is None and self._inflight is None:
            self._start_flush()
        elif self._unsynced:
            self._arm_sync_timer()

    async def flush(self) -> None:
        """Wait until everything appended so far is durable (or failed)."""
        while True:
            if self._pending_futures:
                await asyncio.wait([self._pending_futures[-1]])
            elif self._inflight is not None:
                await asyncio.wait([self._inflight])
            else:
                return

    # -------------------------------------------------------------------- reads
    def read(self, start_offset: int, max_bytes: int = 1 << 20) -> bytes:
        """Whole batches from the one containing ``start_offset``, below the high
        watermark: at most ``max_bytes`` unless the first batch alone is larger."""
        if start_offset < self.log_start_offset or start_offset > self._leo:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} outside [{self.log_start_offset}, {self._leo}]")
        if start_offset >= self._hw:
            return b""
        i = max(0, bisect.bisect_right(self._bases, start_offset) - 1)
        for seg in self._segments[i:]:
            pos = seg.find_position(start_offset, seg.durable_size)
            if pos is not None:
                return seg.read(pos, max_bytes, seg.durable_size)
        return b""

    # ------------------------------------------------- truncation and shutdown
    async def truncate_to(self, offset: int) -> None:
        """Remove every batch whose last offset is >= ``offset`` (whole batches, as
        Kafka does): the new log end offset is the end of the last kept batch, or
        ``offset`` itself if nothing is kept."""
        self._check_writable()
        await self.flush()
        if offset >= self._leo:
            return
        keep = [s for s in self._segments if s.base_offset < offset] or []
        drop = self._segments[len(keep):]
        for seg in drop:
            seg.close()
            unlink_segment(seg)
        if not keep:
            seg = Segment(self.path, max(offset, 0), self._index_interval)
            seg.open_log()
            self._segments = [seg]
        else:
            seg = keep[-1]
            pos = seg.find_position(offset, seg.size)
            seg.close()
            if pos is not None:
                os.truncate(seg.log_path, pos)
            keep[-1] = open_segment(self.path, seg.base_offset, self._index_interval,
                                    last=True, fsync=self._fsync)[0]
            self._segments = keep
        self._bases = [s.base_offset for s in self._segments]
        self._leo = self._segments[-1].next_offset
        self._hw = min(self._hw, self._leo)
        self._log_start = max(self._segments[0].base_offset, min(self._log_start, self._leo))
        fsync_dir(self.path, self._fsync)
        log.info("storage.log.truncated", dir=self.path, offset=offset, log_end_offset=self._leo)

    async def close(self) -> None:
        """Flush, then write the final time-index entry, fsync everything and close the files
        in the flush executor (a topic's deletion closes many logs: no fsync on the loop). A log
        whose write failed is cut back first (log_repair.py), so no failed append outlives it."""
        if self._closed:
            return
        await self.flush()
        if self._closed:
            return
        await self._repair_before_close()
        if self._closed:
            return
        self._mark_closed()
        await asyncio.get_running_loop().run_in_executor(self._executor, self._release_files)

    def close_sync(self) -> None:
        """Close without an event loop; only when nothing is pending (e.g. read-only use)."""
        if self._pending_futures or self._inflight is not None:
            raise StorageError(f"log {self.path} has writes in flight; use `await close()`")
        self._close_files()

    def _close_files(self) -> None:
        if self._closed:
            return
        self._mark_closed()
        self._release_files()

    def _mark_closed(self) -> None:
        self._closed = True
        self._cancel_repair()
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None

    def _release_files(self) -> None:
        try:
            if self._failed is None:
                active = self._segments[-1]
                active.finalize_time_index()
                try:
                    active.write_indexes(self._fsync)
                except FileNotFoundError:
                    pass  # the directory was renamed or removed (a topic being deleted)
                except OSError as exc:  # recovery rebuilds the last segment's indexes anyway
                    log.warning("storage.index.not_written", dir=self.path, error=repr(exc))
                if active.fd >= 0:
                    self._fsync(active.fd)
        finally:
            self._release_fds()

    async def delete(self) -> None:
        """Close and remove the whole partition directory."""
        if not self._closed:
            await self.flush()
            self._mark_closed()
            if self._repairing is not None:
                await asyncio.wait([self._repairing])
            self._release_fds()
        shutil.rmtree(self.path, ignore_errors=True)
