"""The durable RecordLog: one storage.log.PartitionLog per __consumer_offsets partition.

`<log.dirs>/__consumer_offsets-<p>/` in Kafka's layout and record format. A shard's
write's records go into one record batch (Kafka: one batch per write operation; here
the writes of one event-loop turn share batches of up to BATCH_RECORDS records, and a
write never spans two), appended once per partition and turn; PartitionLog puts them
into one write + one fsync (group commit across all requests of the partition), and
the PendingWrites resolve when their batch is durable. A transactional write
(TxnOffsetCommit: `PendingWrite.producer`) and a transaction marker (`PendingWrite.marker`)
each get a batch of their own, in their place among the turn's writes. Encoding errors and storage
errors resolve the write with the exception; errors.commit_error_code /
write_error_code map them to wire codes.

As Kafka refuses a coordinator write whose batch is larger than the offsets topic's
max.message.bytes (CoordinatorRuntime: RecordTooLargeException), a write whose records
pass `max_batch_bytes` fails alone with RecordTooLargeError (a group record is judged
before it is encoded): the log refuses it (`PendingWrite.refuse`) and goes on -- a shard then
takes back the later writes it had in flight too, which fail with EarlierWriteFailed and are
never appended (runtime/journal.py). Any failure while batching (MemoryError included) fails
exactly the writes of that batch (and, for a shard, those after them); the log goes on.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from functools import partial

import structlog

from coordinator.errors import NotCoordinator
from coordinator.records import log_codec
from coordinator.records.types import GroupMetadataRecord, Record
from coordinator.runtime.writes import PendingWrite
from primitives.histogram import Histogram
from rules.placement import OFFSETS_TOPIC
from storage.batch import HEADER_SIZE, build_tail_batch
from storage.control_records import build_marker_batch
from storage.errors import RecordTooLargeError
from storage.log import FlushPolicy, PartitionLog, partition_dir
from storage.log_protocol import PartitionLogProtocol

log = structlog.get_logger(__name__)

BATCH_RECORDS = 1000  # records per batch when one loop turn's writes are joined


def _wall_ms() -> int:
    return int(time.time() * 1000)


class DurableLog:
    """Implements runtime.writes.RecordLog over PartitionLogs opened by `open_partition`."""

    def __init__(self, root: str, *, flush_policy: str = "fsync", flush_interval_ms: int = 1000,
                 segment_bytes: int = 100 * 1024 * 1024, clock_ms: Callable[[], int] | None = None,
                 fsync: Callable[[int], None] = os.fsync,
                 max_batch_bytes: int = 1048588) -> None:
        self.root = root
        self.max_batch_bytes = max_batch_bytes  # the offsets topic's max.message.bytes (message.max.bytes)
        self.flush_policy = FlushPolicy(flush_policy.lower())
        self.flush_interval_ms = flush_interval_ms
        self.segment_bytes = segment_bytes  # Kafka's offsets.topic.segment.bytes default
        self.logs: dict[int, PartitionLogProtocol] = {}
        self._fsync = fsync
        self._queued: dict[int, list[PendingWrite]] = {}  # partition -> writes of this loop turn
        self._append_scheduled = False
        self.clock_ms = clock_ms if clock_ms is not None else _wall_ms
        # For the metrics endpoint: appends handed to the logs, and the time each took to become
        # durable (the fsync, or PostgreSQL's commit in cluster mode).
        self.appends = 0
        self.flush_seconds = Histogram()

    def path(self, partition: int) -> str:
        return partition_dir(self.root, OFFSETS_TOPIC, partition)

    def new_log(self, partition: int) -> PartitionLog:
        """Open (and recover the tail of) the partition's local log under log.dirs, unattached."""
        return self._open([partition])[0]

    def open_partition(self, partition: int) -> PartitionLog:
        """Open the partition's local log and write to it; reopening replaces it."""
        plog = self.logs[partition] = self.new_log(partition)
        return plog

    def open_partitions(self, partitions: Iterable[int]) -> None:
        """open_partition of each, their directories created or recovered concurrently (PartitionLog.open_many)."""
        partitions = list(partitions)
        self.logs.update(zip(partitions, self._open(partitions), strict=True))

    def _open(self, partitions: list[int]) -> list[PartitionLog]:
        return PartitionLog.open_many([self.path(p) for p in partitions], segment_bytes=self.segment_bytes,
                                      flush_policy=self.flush_policy, flush_interval_ms=self.flush_interval_ms,
                                      fsync=self._fsync)

    def attach(self, partition: int, plog: PartitionLogProtocol) -> None:
        """Use a log opened elsewhere (cluster mode: a PgPartitionLog) for the partition."""
        self.logs[partition] = plog

    def detach(self, partition: int) -> PartitionLogProtocol | None:
        """Stop writing to the partition's log (writes queued for it fail NOT_COORDINATOR); the
        caller closes it."""
        return self.logs.pop(partition, None)

    # --- RecordLog -------------------------------------------------------------------------

    def append(self, partition: int, pending: PendingWrite) -> None:
        """Queue the write; at the end of the loop turn the writes queued for a partition
        go to its log in one append (_append_queued, batches by _encode_writes)."""
        if partition not in self.logs:
            pending.resolve(NotCoordinator(f"offsets partition {partition} is not open"))
            return
        queued = self._queued.get(partition)
        if queued is None:
            queued = self._queued[partition] = []
            if not self._append_scheduled:
                self._append_scheduled = True
                asyncio.get_running_loop().call_soon(self._append_queued)
        queued.append(pending)

    def _append_queued(self) -> None:
        self._append_scheduled = False
        queued, self._queued = self._queued, {}
        now = self.clock_ms()
        for partition, writes in queued.items():
            plog = self.logs.get(partition)
            if plog is None:
                for pending in writes:
                    pending.resolve(NotCoordinator(f"offsets partition {partition} is not open"))
                continue
            members, data = _encode_writes(writes, now, self.max_batch_bytes)
            if not members:
                continue
            started = time.perf_counter()
            try:
                result = plog.append(data, flush_now=True)  # this turn's writes of the partition are all here
            except Exception as exc:
                for pending in members:
                    pending.resolve(exc)
                continue
            self.appends += 1
            durable = result.durable
            if durable.done():  # written on return (flush policy none): settled now, not on a later loop turn
                self._durable(started, durable)
                _resolve_all(members, durable)
                continue
            durable.add_done_callback(partial(self._durable, started))
            durable.add_done_callback(partial(_resolve_all, members))

    def _durable(self, started: float, _durable: asyncio.Future[None]) -> None:
        self.flush_seconds.observe(time.perf_counter() - started)

    def flush_queued(self) -> None:
        """Hand this loop turn's queued writes to their logs now."""
        if self._queued:
            self._append_queued()

    def has_queued(self, partition: int) -> bool:
        """Writes not yet handed to the partition's log (they go at the end of this loop turn)."""
        return bool(self._queued.get(partition))

    async def flush(self) -> None:
        self.flush_queued()
        await asyncio.gather(*(plog.flush() for plog in self.logs.values()))

    async def close(self) -> None:
        self.flush_queued()
        logs, self.logs = list(self.logs.values()), {}
        for plog in logs:
            try:
                await plog.close()
            except Exception:
                log.exception("closing offsets log failed", dir=plog.path)

    async def close_partition(self, partition: int) -> None:
        self.flush_queued()
        plog = self.logs.pop(partition, None)
        if plog is not None:
            await plog.close()


def _encode_writes(writes: list[PendingWrite], now: int,
                   max_batch_bytes: int) -> tuple[list[PendingWrite], bytes]:
    """The writes still waiting and their batches: one per run of writes of up to
    BATCH_RECORDS records; a write never spans two (a batch is all-or-nothing on
    recovery). A write that cannot be encoded, or whose records pass `max_batch_bytes`,
    fails alone; a batch that cannot be built fails its writes."""
    batches: list[bytes] = []
    members: list[PendingWrite] = []
    run: list[PendingWrite] = []  # the writes whose tails make the batch being built
    tails: list[bytes] = []
    encode_tails = log_codec.encode_tails
    for pending in writes:
        if pending.done():  # e.g. failed by an unload meanwhile
            continue
        if pending.producer is not None or pending.marker is not None:
            # a transactional write or a marker: a batch of its own (its header says whose it is)
            if tails:
                _close_run(run, tails, now, batches, members)
                run, tails = [], []
            _own_batch(pending, now, max_batch_bytes, batches, members)
            continue
        try:
            encoded = pending.tails
            if encoded is None:
                _refuse_large_group_records(pending.records, max_batch_bytes)
                encoded = encode_tails(pending.records)
            size = HEADER_SIZE + sum(map(len, encoded))
            if size > max_batch_bytes:
                raise RecordTooLargeError(f"a write of {size} bytes passes the offsets log's "
                                          f"max.message.bytes {max_batch_bytes}")
        except ValueError as exc:  # a string too long for its field: the commit is too large
            pending.refuse(RecordTooLargeError(str(exc)))
            continue
        except Exception as exc:  # e.g. a number out of its field's range, MemoryError
            pending.refuse(exc)
            continue
        if tails and len(tails) + len(encoded) > BATCH_RECORDS:
            _close_run(run, tails, now, batches, members)
            run, tails = [], []
        tails += encoded
        run.append(pending)
    if tails:
        _close_run(run, tails, now, batches, members)
    if len(batches) == 1:
        return members, batches[0]
    try:
        return members, b"".join(batches)
    except Exception as exc:  # MemoryError: nothing of this turn is written
        for pending in members:
            pending.resolve(exc)
        return [], b""


def _close_run(run: list[PendingWrite], tails: list[bytes], now: int, batches: list[bytes],
               members: list[PendingWrite]) -> None:
    """Build the run's batch; if that fails, the run's writes fail with the error."""
    try:
        batches.append(build_tail_batch(tails, now))
    except Exception as exc:
        for pending in run:
            pending.resolve(exc)
        return
    members += run


def _own_batch(pending: PendingWrite, now: int, max_batch_bytes: int, batches: list[bytes],
               members: list[PendingWrite]) -> None:
    """The batch of a transactional write (its records, the producer's id and epoch, base sequence 0 as
    Kafka's CoordinatorRuntime writes them) or of a marker (storage.control_records); a failure fails it alone."""
    try:
        marker = pending.marker
        if marker is not None:
            batch = build_marker_batch(marker.producer_id, marker.producer_epoch, marker.commit,
                                       marker.coordinator_epoch, now)
        else:
            assert pending.producer is not None
            encoded = pending.tails if pending.tails is not None else log_codec.encode_tails(pending.records)
            size = HEADER_SIZE + sum(map(len, encoded))
            if size > max_batch_bytes:
                raise RecordTooLargeError(f"a write of {size} bytes passes the offsets log's "
                                          f"max.message.bytes {max_batch_bytes}")
            producer_id, producer_epoch = pending.producer
            batch = build_tail_batch(encoded, now, producer_id, producer_epoch, 0, True)
    except ValueError as exc:  # a string too long for its field: the commit is too large
        pending.refuse(RecordTooLargeError(str(exc)))
        return
    except Exception as exc:
        pending.refuse(exc)
        return
    batches.append(batch)
    members.append(pending)


def _refuse_large_group_records(records: Iterable[Record], max_batch_bytes: int) -> None:
    """RecordTooLargeError for a group record whose members' subscriptions and assignments
    alone pass the limit, before encoding it costs their size again in memory."""
    for record in records:
        if type(record) is GroupMetadataRecord and record.value is not None:
            size = sum(len(m.subscription or b"") + len(m.assignment or b"") for m in record.value.members)
            if size > max_batch_bytes:
                raise RecordTooLargeError(f"group {record.group_id!r}: {size} bytes of member metadata pass "
                                          f"the offsets log's max.message.bytes {max_batch_bytes}")


def _resolve_all(writes: list[PendingWrite], durable: asyncio.Future[None]) -> None:
    if durable.cancelled():
        error: BaseException | None = asyncio.CancelledError()
    else:
        error = durable.exception()
    for pending in writes:
        pending.resolve(error)
