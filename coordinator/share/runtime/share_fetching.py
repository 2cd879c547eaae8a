"""ShareFetch and ShareAcknowledge on the share partitions of this node (Kafka's SharePartitionManager.fetchMessages /
acknowledge and DelayedShareFetch), without protocol versions.

* Acknowledgements of one partition: the request-level checks (coordinator/share/ack_checks.py: INVALID_REQUEST),
  then the share partition's all-or-nothing `acknowledge` (INVALID_RECORD_STATE for an offset the member does not
  hold), answered once their state is durable (a failed write is rolled back and answered with its error).
* Fetching: each share partition of the session, in turn, acquires from its next fetch offset what the log holds
  (share_reads.py), up to MaxRecords for the whole request; the answer carries the log's batches that hold acquired
  records and the acquired ranges. When nothing was acquired and MaxWaitMs > 0, the fetch waits in the data
  plane's purgatory until an append to one of its topic partitions or records made available again on one of
  its share partitions (share_partitions.share_key), or MaxWaitMs, and tries once more.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.data_plane.ownership import not_hosted_error
from coordinator.share.ack_checks import check_ack_batches
from coordinator.share.record_states import AckBatch, AcquiredRecords, AcquireMode
from coordinator.share.runtime.share_partitions import Entry, SharePartitions, share_key
from coordinator.share.runtime.share_reads import acquired_bytes, read_log
from coordinator.share.state_store import Answer

PartitionKey = tuple[uuid.UUID, int]  # (topic id, partition)


@dataclass
class FetchedPartition:
    """One partition of a ShareFetch answer."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    records: bytes = b""
    acquired: list[AcquiredRecords] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FetchLimits:
    max_records: int
    batch_size: int
    max_bytes: int
    mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED


class ShareFetching:
    def __init__(self, partitions: SharePartitions, data: Any) -> None:
        self.partitions = partitions
        self.data = data  # the DataPlane: its catalog, hosted partitions and purgatory

    async def entry(self, group_id: str, topic_id: uuid.UUID, index: int) -> Entry | tuple[ErrorCode, str | None]:
        """The loaded share partition of (topic id, partition) for the group, or the error for it."""
        info = self.data.catalog.by_id(topic_id)
        if info is None or info.internal:
            return ErrorCode.unknown_topic_id, None
        if not 0 <= index < info.partitions:
            return ErrorCode.unknown_topic_or_partition, None
        target = self.data.partition(info.name, index)
        if target is None:
            return not_hosted_error(self.data, info.name, index), None
        got = await self.partitions.get(group_id, info.name, topic_id, index, target)
        if isinstance(got, Answer):
            return got.error, got.message
        return got

    async def acknowledge(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int,
                          batches: Sequence[AckBatch], renew_allowed: bool) -> tuple[ErrorCode, str | None]:
        """Apply one partition's acknowledgement batches; the answer once they are durable."""
        refused = check_ack_batches(batches, renew_allowed)
        if refused is not None:
            return refused
        entry = await self.entry(group_id, topic_id, index)
        if not isinstance(entry, Entry):
            return entry
        result = entry.partition.acknowledge(member_id, list(batches), self.partitions.wall_ms())
        if result.error is not ErrorCode.none:
            return result.error, result.message
        self.partitions.changed(entry)
        return await self.partitions.persist(entry, result.change), None

    def _acquire(self, group_id: str, member_id: str, entry: Entry, limits: FetchLimits, remaining: int,
                 read_committed: bool) -> FetchedPartition:
        partition = entry.partition
        if not partition.can_acquire():
            return FetchedPartition()
        read = read_log(entry.target, partition.next_fetch_offset(), limits.max_bytes, read_committed)
        if not read.batches:
            return FetchedPartition()
        acquired, change = partition.acquire(member_id, read.batches, remaining, limits.batch_size,
                                             self.partitions.wall_ms(), limits.mode, read_committed, read.aborted)
        self.partitions.arm(entry)
        self.partitions.persist_soon(entry, change)
        return FetchedPartition(records=acquired_bytes(read, acquired), acquired=acquired)

    async def fetch(self, group_id: str, member_id: str, keys: Sequence[PartitionKey], limits: FetchLimits,
                    read_committed: bool, wait_s: float, holder: Any = None) -> dict[PartitionKey, FetchedPartition]:
        """Acquire records of the session's partitions `keys` for the member (see the module docstring).
        `holder.delayed` is set to the parked DelayedFetch while the fetch waits (released if the client goes)."""
        answers: dict[PartitionKey, FetchedPartition] = {}
        entries: list[tuple[PartitionKey, Entry]] = []
        for key in keys:
            got = await self.entry(group_id, *key)
            if isinstance(got, Entry):
                entries.append((key, got))
            else:
                answers[key] = FetchedPartition(*got)
        if not entries or limits.max_records <= 0 or limits.max_bytes <= 0:
            return answers
        got_any = self._pass(group_id, member_id, entries, limits, read_committed, answers)
        if got_any or wait_s <= 0:
            return answers
        watch = [entry.target.key for _, entry in entries] + [share_key(entry.key) for _, entry in entries]
        delayed = self.data.purgatory.park(watch, 1, wait_s)
        if holder is not None:
            holder.delayed = delayed
        try:
            await delayed.future
        finally:
            delayed.release()
        self._pass(group_id, member_id, entries, limits, read_committed, answers)
        return answers

    def _pass(self, group_id: str, member_id: str, entries: list[tuple[PartitionKey, Entry]], limits: FetchLimits,
              read_committed: bool, answers: dict[PartitionKey, FetchedPartition]) -> bool:
        remaining = limits.max_records
        got_any = False
        for key, entry in entries:
            if remaining <= 0:
                break
            if self.partitions.entries.get(entry.key) is not entry:  # reloaded or dropped meanwhile
                continue
            fetched = self._acquire(group_id, member_id, entry, limits, remaining, read_committed)
            if fetched.acquired:
                got_any = True
                remaining -= sum(a.last_offset - a.first_offset + 1 for a in fetched.acquired)
                answers[key] = fetched
        return got_any
