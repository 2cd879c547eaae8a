"""PgPartitionLog: one partition whose log of record is PostgreSQL (kc_batches), read from a local replica.

The surface is storage/log_protocol.py's PartitionLogProtocol, as storage.log.PartitionLog's, so nothing
above the log (DurableLog, the transaction state log, the data plane, retention, the loader, Fetch) changes in
cluster mode.

* **Replica.** Reads (Fetch, the loader, producer-state rebuild) stay synchronous local reads of a
  PartitionLog in a scratch directory (flush policy none, no fsync: PostgreSQL is the durability).
  ``open`` wipes the directory and copies the rows from the log start offset on, keeping their offsets.
* **Writer.** ``append`` assigns offsets at once (the replica's log end offset, which is PostgreSQL's
  end) and writes the replica; the rows of every append of one loop turn go to PostgreSQL in one
  fenced statement (group commit, ``batches.append``). At most one such transaction is in flight, so
  rows commit in offset order; appends arriving meanwhile form the next one. ``durable`` resolves after
  the COMMIT (and the replica's write); only then does the high watermark, which bounds every read,
  move. Bytes the replica holds beyond it are never returned.
* **Failure.** A fenced write, a lost connection or a commit whose outcome is unknown fails every
  waiting append with that error and every later one at once; ``failed`` says so. The replica may hold
  bytes PostgreSQL never committed, so the owner recovers by opening the partition again (or drops it).
* **Log start, retention, compaction.** The replica decides as in local mode; each change is then
  made in PostgreSQL, fenced (``set_log_start``/``delete_below``, ``replace_range``); a failure
  there fails the log as above.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import struct
import uuid
from collections.abc import Callable
from concurrent.futures import Executor

import structlog

from storage import batch as batch_format
from storage.cleaner import CleanStats
from storage.errors import CorruptRecordError, LogClosedError, OffsetOutOfRangeError, StorageError
from storage.log import AppendResult, FlushPolicy, PartitionLog
from storage.log_compaction import CompactionPolicy
from storage.log_timestamps import TimestampOffset
from storage.retention_rules import SegmentInfo
from storage.segment import segment_name

from . import batches
from .batches import BatchRow
from .connect import unavailable_as_store_error
from .errors import FencedError, StoreUnavailableError

log = structlog.get_logger(__name__)

COPY_CHUNK_BYTES = 8 << 20  # rows read per query while opening
REPLICA_SEGMENT_BYTES = 1 << 30
RELOADED_SUFFIX = ".reloaded"  # a replica rebuilt while the log is open alternates between two dirs
_OFFSET_LENGTH = struct.Struct(">qi")  # a batch's base offset and length


def _no_fsync(_fd: int) -> None:
    """The replica is a cache: PostgreSQL is the durability, a crash wipes and rebuilds it."""


def _below(data: bytes, end: int) -> bytes:
    """The whole batches of ``data`` whose base offset is below ``end``."""
    position = 0
    while position < len(data):
        base, length = _OFFSET_LENGTH.unpack_from(data, position)
        if base >= end:
            break
        position += length + batch_format.LOG_OVERHEAD
    return data[:position]


class PgPartitionLog:
    """Use ``PgPartitionLog.open``; see the module docstring for the guarantees."""

    def __init__(self, pool, topic_id: uuid.UUID, partition: int, epoch: int, replica: PartitionLog,
                 durable_start: int) -> None:
        self._pool = pool
        self.topic_id = topic_id
        self.partition = partition
        self.epoch = epoch
        self._replica = replica
        self.path = replica.path
        self._hw = replica.log_end_offset  # opened from committed rows only
        self._durable_start = durable_start  # kc_partitions.log_start as this node last wrote it
        self._rows: list[BatchRow] = []  # rows of the appends waiting for the next transaction
        self._waiting: list[asyncio.Future] = []
        self._replica_writes: list[asyncio.Future] = []
        self._queued_end = self._hw
        self._scheduled = False
        self._inflight: asyncio.Task | None = None
        self._start_lock = asyncio.Lock()
        self.failed: StorageError | None = None
        self._closed = False
        self.transactions = 0  # group commits done (tests and benchmarks read it)

    # ------------------------------------------------------------------- opening
    @classmethod
    async def open(cls, pool, topic_id: uuid.UUID, partition: int, epoch: int, scratch_dir: str, *,
                   segment_bytes: int = REPLICA_SEGMENT_BYTES, chunk_bytes: int = COPY_CHUNK_BYTES,
                   executor: Executor | None = None) -> PgPartitionLog:
        """Wipe ``scratch_dir`` and copy the partition's rows from its log start offset into a fresh
        replica there, keeping their offsets, ``chunk_bytes`` per query (the loop runs between chunks).
        FencedError if the partition's epoch is not ``epoch``; StoreUnavailableError if PostgreSQL is."""
        with unavailable_as_store_error(f"open partition {topic_id}/{partition}"):
            async with pool.acquire() as conn:
                ends = await batches.end_offset(conn, topic_id, partition)
                if ends is None or ends.epoch != epoch:
                    raise FencedError(f"partition {topic_id}/{partition}: epoch "
                                      f"{None if ends is None else ends.epoch}, this writer's is {epoch}")
                first = await batches.read_rows(conn, topic_id, partition, ends.log_start, chunk_bytes)
                base = min(ends.log_start, first[0].base_offset) if first else ends.log_start
                await asyncio.get_running_loop().run_in_executor(executor, _wipe, scratch_dir, base)
                replica = PartitionLog.open(scratch_dir, segment_bytes=segment_bytes,
                                            flush_policy=FlushPolicy.NONE, fsync=_no_fsync,
                                            self_repair=False)  # this log fails and its owner reopens it
                try:
                    await _copy(conn, replica, topic_id, partition, first, ends.end, chunk_bytes)
                    if ends.log_start > replica.log_start_offset:
                        replica.advance_log_start(ends.log_start)
                except BaseException:
                    await replica.close()
                    raise
        log.info("storage.pg.partition_opened", topic_id=str(topic_id), partition=partition, epoch=epoch,
                 log_start_offset=replica.log_start_offset, log_end_offset=replica.log_end_offset)
        return cls(pool, topic_id, partition, epoch, replica, ends.log_start)

    # --------------------------------------------------------------- properties
    @property
    def pool(self):
        """The pool this log writes through (the staged-compaction check applies blobs with it)."""
        return self._pool

    @property
    def log_start_offset(self) -> int:
        return self._replica.log_start_offset

    @property
    def log_end_offset(self) -> int:
        """Next offset to be assigned (includes appends not yet committed)."""
        return self._replica.log_end_offset

    @property
    def high_watermark(self) -> int:
        """End of what PostgreSQL committed: offsets below it are readable and acknowledged."""
        return self._hw

    @property
    def flushing(self) -> bool:
        return bool(self._waiting) or self._inflight is not None

    def segment_infos(self) -> list[SegmentInfo]:
        return self._replica.segment_infos()

    # ------------------------------------------------------------------ appends
    def append(self, data: bytes | bytearray | memoryview, *,
               partition_leader_epoch: int | None = None, flush_now: bool = False) -> AppendResult:
        """Append one or more v2 batches at the log end offset; ``durable`` resolves after COMMIT.
        Bad input raises a RecordError and changes nothing; a failed log raises its error. (`flush_now`: the
        local log's; the COMMIT is always batched by the writer.)"""
        self._check_writable()
        buf = bytearray(data)
        metas = batch_format.scan_for_append(buf, self._replica.segment_bytes)
        done = self._replica.append(buf, partition_leader_epoch=partition_leader_epoch)
        offset = done.base_offset
        rows = self._rows
        single = len(metas) == 1
        for position, size, delta, max_ts in metas:
            batch_format.assign_offsets(buf, offset, position=position, partition_leader_epoch=partition_leader_epoch)
            rows.append(BatchRow(offset, offset + delta, max_ts, bytes(buf) if single else
                                 bytes(buf[position:position + size])))
            offset += delta + 1
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._waiting.append(fut)
        self._replica_writes.append(done.durable)
        self._queued_end = offset
        if not self._scheduled and self._inflight is None:
            self._scheduled = True
            loop.call_soon(self._start_transaction)
        return AppendResult(done.base_offset, done.last_offset, fut)

    def append_records(self, records, **batch_args) -> AppendResult:
        return self.append(batch_format.build_batch(records, **batch_args))

    def _check_writable(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self.path} is closed")
        failed = self.failed
        if failed is not None:  # a new error of the same kind (fenced, unavailable), so the same answer
            raise type(failed)(f"log {self.path} failed earlier and must be reopened: {failed}") from failed

    def _start_transaction(self) -> None:
        self._scheduled = False
        if self._inflight is not None or not self._waiting or self.failed is not None:
            return
        rows, waiting, writes = self._rows, self._waiting, self._replica_writes
        self._rows, self._waiting, self._replica_writes = [], [], []
        self._inflight = asyncio.get_running_loop().create_task(
            self._commit(rows, waiting, writes, self._queued_end))

    async def _commit(self, rows: list[BatchRow], waiting: list[asyncio.Future],
                      writes: list[asyncio.Future], end: int) -> None:
        try:
            try:
                with unavailable_as_store_error(f"append to {self.topic_id}/{self.partition}"):
                    async with self._pool.acquire() as conn:
                        await batches.append(conn, self.topic_id, self.partition, self.epoch, rows)
                for write in writes:
                    await write
            except asyncio.CancelledError:
                self._fail(StoreUnavailableError("append cancelled: its commit outcome is unknown"), waiting)
                raise
            except Exception as exc:  # any other error: the outcome is unknown too
                self._fail(exc if isinstance(exc, StorageError) else _unknown(exc), waiting)
                return
        finally:
            self._inflight = None
        self.transactions += 1
        self._hw = end
        for fut in waiting:
            if not fut.done():
                fut.set_result(None)
        if self._waiting:
            self._start_transaction()

    def _fail(self, error: StorageError, waiting: list[asyncio.Future] | None = None) -> None:
        """Fail every waiting append with ``error`` and refuse the next ones."""
        if self.failed is None:
            self.failed = error
            log.error("storage.pg.log_failed", topic_id=str(self.topic_id), partition=self.partition,
                      epoch=self.epoch, error=repr(error))
        for fut in [*(waiting or ()), *self._waiting]:
            if not fut.done():
                fut.set_exception(error)
        self._rows, self._waiting = [], []
        for write in self._replica_writes:  # retrieved: nobody awaits them any more
            write.add_done_callback(_retrieve)
        self._replica_writes = []

    async def flush(self) -> None:
        """Wait until everything appended so far is committed (or failed)."""
        while True:
            if self._waiting:
                await asyncio.wait([self._waiting[-1]])
            elif self._inflight is not None:
                await asyncio.wait([self._inflight])
            else:
                return

    # -------------------------------------------------------------------- reads
    def read(self, start_offset: int, max_bytes: int = 1 << 20) -> bytes:
        """Whole batches from the one containing ``start_offset``, below the high watermark."""
        replica = self._replica
        if start_offset < replica.log_start_offset or start_offset > replica.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} outside [{replica.log_start_offset}, {replica.log_end_offset}]")
        if start_offset >= self._hw:
            return b""
        data = replica.read(start_offset, max_bytes)
        return _below(data, self._hw) if replica.high_watermark > self._hw else data

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """As PartitionLog's (the caller drops an answer at or above the high watermark)."""
        return self._replica.offset_for_timestamp(timestamp)

    def max_timestamp_offset(self) -> TimestampOffset | None:
        return self._replica.max_timestamp_offset()

    # ------------------------------------------------- log start, retention, compaction
    def advance_log_start(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` in memory (``checkpoint_log_start`` writes it)."""
        if self._closed:
            raise LogClosedError(f"log {self.path} is closed")
        if offset < 0 or offset > self._hw:
            raise OffsetOutOfRangeError(f"Cannot increment the log start offset to {offset} of partition "
                                        f"{self.topic_id}/{self.partition} since it is larger than the high "
                                        f"watermark {self._hw}")
        return self._replica.advance_log_start(offset)

    async def checkpoint_log_start(self) -> None:
        """Make the current log start offset durable in PostgreSQL (fenced); the rows wholly below it go."""
        async with self._start_lock:
            value = self._replica.log_start_offset
            if value > self._durable_start:
                await self._in_store(f"set the log start offset of {self.topic_id}/{self.partition}",
                                     lambda conn: batches.set_log_start(conn, self.topic_id, self.partition,
                                                                        self.epoch, value))
                self._durable_start = max(self._durable_start, value)

    async def start_empty_at(self, offset: int) -> None:
        """As PartitionLog's: a partition with no row continues at ``offset`` (a bulk-load snapshot holds
        its state up to there). kc_partitions.log_start moves first (fenced), then the replica."""
        if offset <= self.log_end_offset:
            return
        if self.log_start_offset != self.log_end_offset or self.flushing:
            raise ValueError(f"partition {self.topic_id}/{self.partition} holds records: cannot start it anew")
        async with self._start_lock:
            await self._in_store(f"start {self.topic_id}/{self.partition} at {offset}",
                                 lambda conn: batches.set_log_start(conn, self.topic_id, self.partition,
                                                                    self.epoch, offset))
            self._durable_start = max(self._durable_start, offset)
        await self._replica.start_empty_at(offset)
        self._hw = self._queued_end = offset

    async def delete_oldest(self, count: int, executor) -> int:
        """Retention: delete up to ``count`` of the oldest replica segments, then their rows (fenced)."""
        if self.failed is not None:
            return 0
        deleted = await self._replica.delete_oldest(count, executor)
        if deleted:
            await self.checkpoint_log_start()
        return deleted

    async def compact(self, policy: CompactionPolicy, now_ms: int, executor, *, last_stable_offset: int | None = None,
                      aborted_txns=()) -> CleanStats | None:
        """Compact the replica's closed segments, then replace their rows in PostgreSQL (fenced), one
        transaction per chunk of whole batches (a chunk replaced is a valid log, as a segment swapped
        in locally is)."""
        if self.failed is not None:
            return None
        await self.flush()  # nothing uncommitted in the replica when compact picks its segments
        first = self._replica.log_start_offset
        stats = await self._replica.compact(policy, now_ms, executor, last_stable_offset=last_stable_offset,
                                            aborted_txns=aborted_txns)
        if stats is None:  # a rewritten batch may differ in bytes alone (a delete horizon): always replace
            return stats
        upper = self._replica.cleaned_upto
        while first < upper:
            data = self._replica.read(first, COPY_CHUNK_BYTES) if first < self._replica.high_watermark else b""
            rows = [r for r in batches.rows_of(data) if r.base_offset < upper]
            last = rows[-1].last_offset if rows else upper - 1
            await self._in_store(f"compact {self.topic_id}/{self.partition}",
                                 lambda conn, a=first, b=last, rs=rows: batches.replace_range(
                                     conn, self.topic_id, self.partition, self.epoch, a, b, rs))
            first = last + 1
        return stats

    async def reload_replica(self) -> bool:
        """Rebuild the replica from the committed rows (after rows were replaced under it: a staged
        compaction applied) in the sibling scratch directory and switch to it -- with no await between
        the check and the switch -- if nothing was appended meanwhile; returns whether it switched
        (if not, the old replica stays: the same records but for superseded ones)."""
        suffix = RELOADED_SUFFIX
        other = self.path[:-len(suffix)] if self.path.endswith(suffix) else self.path + suffix
        fresh = await PgPartitionLog.open(self._pool, self.topic_id, self.partition, self.epoch, other,
                                          segment_bytes=self._replica.segment_bytes)
        if (self.failed is not None or self._closed or self.flushing or self._rows
                or fresh.high_watermark != self._hw or fresh.log_end_offset != self.log_end_offset):
            await fresh.delete()
            return False
        old, self._replica, self.path = self._replica, fresh._replica, fresh.path
        await old.close()
        shutil.rmtree(old.path, ignore_errors=True)
        return True

    async def _in_store(self, what: str, statement: Callable) -> None:
        """Run one fenced statement; any failure fails the log (the owner reloads it) and is raised."""
        try:
            with unavailable_as_store_error(what):
                async with self._pool.acquire() as conn:
                    await statement(conn)
        except StorageError as exc:  # fenced, unavailable
            self._fail(exc)
            raise
        except Exception as exc:
            error = _unknown(exc)
            self._fail(error)
            raise error from exc

    # ------------------------------------------------------------------ closing
    async def close(self) -> None:
        """Wait for the transactions in flight, then close the replica (its files stay until reopened)."""
        if self._closed:
            return
        await self.flush()
        self._closed = True
        await self._replica.close()

    def rename_dir(self, new_path: str) -> None:
        """DeleteTopics renames the replica's directory first, as a local log's (storage/log_files.py)."""
        self._replica.rename_dir(new_path)
        self.path = new_path

    def moved_to(self, new_path: str) -> None:
        self._replica.moved_to(new_path)
        self.path = new_path

    async def delete(self) -> None:
        """Close and remove the replica (the rows are the catalog's: ``batches.delete_topic``)."""
        await self.close()
        shutil.rmtree(self.path, ignore_errors=True)


def _unknown(exc: BaseException) -> StoreUnavailableError:
    error = StoreUnavailableError(f"PostgreSQL write failed, outcome unknown: {exc!r}")
    error.__cause__ = exc
    return error


def _retrieve(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()


def _wipe(scratch_dir: str, base_offset: int) -> None:
    """Empty ``scratch_dir`` but for an empty first segment at ``base_offset`` (where the replica starts)."""
    shutil.rmtree(scratch_dir, ignore_errors=True)
    os.makedirs(scratch_dir)
    open(os.path.join(scratch_dir, segment_name(base_offset) + ".log"), "wb").close()


async def _copy(conn, replica: PartitionLog, topic_id: uuid.UUID, partition: int, rows: list[BatchRow],
                end: int, chunk_bytes: int) -> None:
    """Append ``rows`` and every later row to ``replica``, keeping their offsets: each run of contiguous
    rows in one append (a gap, which compaction leaves, starts a new run), one chunk at a time."""
    while rows:
        start = 0
        for i in range(1, len(rows) + 1):
            if i == len(rows) or rows[i].base_offset != rows[i - 1].last_offset + 1:
                _append_run(replica, rows[start:i])
                start = i
        await replica.flush()
        if replica.log_end_offset >= end:
            break
        rows = await batches.read_rows(conn, topic_id, partition, replica.log_end_offset, chunk_bytes)
    if replica.log_end_offset != end:
        raise StorageError(f"partition {topic_id}/{partition}: rows end at {replica.log_end_offset}, "
                           f"the store says {end}")


def _append_run(replica: PartitionLog, run: list[BatchRow]) -> None:
    done = replica.append_at(b"".join(r.data for r in run), run[0].base_offset)
    if done.last_offset != run[-1].last_offset:
        raise CorruptRecordError(f"rows {run[0].base_offset}..{run[-1].last_offset}: their batches "
                                 f"end at {done.last_offset}")
