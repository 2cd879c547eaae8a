"""Shards: one per __consumer_offsets partition, owning its groups, timers and writes.

A group lives in shard `partition_for(group_id, offsets.topic.num.partitions)`. All
shards run on one event loop; each has its own `KeyedTimers` (over the shared scheduler)
so that timers of one shard never see another's keys, and its own `write`.

`Shard.write(records)` is the durability seam ("records are the truth"): it applies
the records to the shard's state through `replay_all` -- the one function loading uses --
hands them to a `RecordLog` and returns a `PendingWrite`, which both the domain
(synchronous callbacks, run the moment the log completes it) and handlers (`await`)
can wait on. Whatever depends on the records being durable -- an OffsetCommit answer,
the Stable transition and every SyncGroup answer, a LeaveGroup or DeleteGroups answer
-- waits for it. `MemoryLog` keeps the records in memory and completes each write on
the next loop turn (or when a test says so); offsets_log.DurableLog is the real one.

Classic-group records are the exception Kafka makes too (CoordinatorResult with
replayRecords=false): the group state machine changes the live ClassicGroup itself
and the GroupMetadata record only describes the result, so its live replay is a
no-op; on load `replay` rebuilds the group from it.

A shard is LOADING (its groups answer COORDINATOR_LOAD_IN_PROGRESS), ACTIVE, or
UNLOADED (NOT_COORDINATOR: another node owns it, or it was never ours).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from enum import Enum
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import NotCoordinator
from coordinator.groups.classic_group import ClassicGroup, GroupState, JoinResult, SyncResult
from coordinator.offsets.store import OffsetStore
from coordinator.records import OffsetCommitRecord, Record
from coordinator.runtime.timers import KeyedTimers, Scheduler
from coordinator.runtime.writes import MemoryLog, PendingWrite, RecordLog
from storage.placement import partition_for

log = structlog.get_logger(__name__)

class ShardState(Enum):
    LOADING = "loading"
    ACTIVE = "active"
    UNLOADED = "unloaded"


_STATE_ERRORS = {ShardState.LOADING: ErrorCode.coordinator_load_in_progress,
                 ShardState.UNLOADED: ErrorCode.not_coordinator}


class Shard:
    """The groups of one offsets partition, their timers and their writes."""

    def __init__(self, partition: int, coordinator: GroupCoordinator) -> None:
        from coordinator.groups.membership import Membership  # membership imports shard types

        self.partition = partition
        self.coordinator = coordinator
        self.settings = coordinator.settings
        self.scheduler = coordinator.scheduler
        self.record_log = coordinator.record_log
        self.state = ShardState.ACTIVE
        self.error: ErrorCode | None = None  # the answer for this shard's groups when not ACTIVE
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets = OffsetStore()
        self.timers = KeyedTimers(self.scheduler, on_error=self._timer_failed)
        self.membership = Membership(self)

    def set_state(self, state: ShardState) -> None:
        self.state = state
        self.error = _STATE_ERRORS.get(state)

    # --- records ------------------------------------------------------------------------

    def write(self, records: list[Record], tails: list[bytes] | None = None) -> PendingWrite:
        """Apply `records` through `replay_all`, append them; the result completes when durable.
        `tails`, if given, must be record_codec.encode_tails(records) (the log uses them)."""
        pending = PendingWrite(records, tails)
        if self.state is ShardState.UNLOADED:
            pending.resolve(NotCoordinator(f"partition {self.partition} is not loaded here"))
            return pending
        undo: list = []
        self.replay_all(records, True, undo)
        pending._store = store = self.offsets
        store.begin(pending, records, undo)
        try:
            self.record_log.append(self.partition, pending)
        except Exception as exc:  # e.g. the log is closed: fail the write, never the caller
            pending.resolve(exc)
        return pending

    def replay(self, record: Record, live: bool = False) -> None:
        """Apply one record: `replay_all` of one."""
        self.replay_all((record,), live)

    def replay_all(self, records: Iterable[Record], live: bool = False, undo: list | None = None) -> None:
        """Apply records to this shard's state, in order: the one path for live writes
        (`live`; `undo` gets what each offset record replaced, see OffsetStore) and loading.

        Runs of OffsetCommit records go to the store in one `apply_all` call; the common
        case, a write of commits only, is one run.
        """
        run: list = []
        for record in records:
            if type(record) is OffsetCommitRecord:
                run.append(record)
                continue
            if run:
                self._replay_offsets(run, undo)
                run = []
            if live:
                continue  # classic groups change in memory first; the record describes them
            from coordinator.runtime.loader import group_from_record  # loader imports shard types

            if record.value is None:
                self.groups.pop(record.group_id, None)
            else:
                self.groups[record.group_id] = group_from_record(record.group_id, record.value)
        if run:
            self._replay_offsets(run, undo)

    def _replay_offsets(self, records: list, undo: list | None) -> None:
        self.offsets.apply_all(records, undo, self._offset_committed_to)

    def _offset_committed_to(self, group_id: str) -> None:
        if group_id not in self.groups:
            # OffsetMetadataManager.replay: offsets without a group make a "simple"
            # group, an Empty classic group without protocol type
            self.groups[group_id] = ClassicGroup(group_id, self.scheduler.wall_ms())

    # --- unloading --------------------------------------------------------------------

    def unload(self) -> None:
        """Drop this partition's groups; pending operations fail with NOT_COORDINATOR.

        Kafka's onUnloaded: waiting JoinGroup/SyncGroup requests are answered
        NOT_COORDINATOR and the groups go Dead; writes still in flight are failed (their
        records may still reach the disk: a later load replays them, which is safe).
        """
        self.set_state(ShardState.UNLOADED)
        self.timers.cancel_all()
        error = ErrorCode.not_coordinator
        now = self.scheduler.wall_ms()
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                group.complete_join(member, JoinResult(error, member.member_id))
                group.complete_sync(member, SyncResult(error))
            if group.state is not GroupState.DEAD:
                group.transition_to(GroupState.DEAD, now)
        self.groups.clear()
        writes = list(self.offsets.inflight)
        self.offsets.inflight.clear()  # the store goes with the partition: nothing to take back
        for pending in writes:
            pending.resolve(NotCoordinator(f"partition {self.partition} was unloaded"))
        self.offsets = OffsetStore()
        log.info("partition unloaded", partition=self.partition)

    def _timer_failed(self, key: Any, exc: BaseException) -> None:
        log.error("group timer failed", partition=self.partition, key=str(key), exc_info=exc)


class GroupSettings:
    """The group.* settings the coordinator reads, in one small object (tests build it directly)."""

    __slots__ = ("min_session_timeout_ms", "max_session_timeout_ms", "initial_rebalance_delay_ms",
                 "max_size", "new_member_join_timeout_ms", "offsets_partitions", "offset_metadata_max_bytes",
                 "offsets_retention_ms", "offsets_retention_check_interval_ms", "offsets_max_batch_bytes")

    def __init__(self, min_session_timeout_ms: int = 6000, max_session_timeout_ms: int = 1800000,
                 initial_rebalance_delay_ms: int = 3000, max_size: int = 2**31 - 1,
                 new_member_join_timeout_ms: int = 5 * 60 * 1000, offsets_partitions: int = 50,
                 offset_metadata_max_bytes: int = 4096, offsets_retention_ms: int = 10080 * 60_000,
                 offsets_retention_check_interval_ms: int = 600_000, offsets_max_batch_bytes: int = 1048588) -> None:
        self.offsets_max_batch_bytes = offsets_max_batch_bytes  # the offsets topic's max.message.bytes
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self.offsets_retention_ms = offsets_retention_ms
        self.offsets_retention_check_interval_ms = offsets_retention_check_interval_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.max_size = max_size
        self.new_member_join_timeout_ms = new_member_join_timeout_ms
        self.offsets_partitions = offsets_partitions

    @classmethod
    def from_config(cls, config: Any) -> GroupSettings:
        return cls(config.group_min_session_timeout_ms, config.group_max_session_timeout_ms,
                   config.group_initial_rebalance_delay_ms, config.group_max_size,
                   offsets_partitions=config.offsets_topic_num_partitions,
                   offset_metadata_max_bytes=config.offset_metadata_max_bytes,
                   offsets_retention_ms=config.offsets_retention_minutes * 60_000,
                   offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
                   offsets_max_batch_bytes=config.message_max_bytes)


_SHARD_CACHE_LIMIT = 100_000


class GroupCoordinator:
    """All shards of this node; routes a group id to its shard."""

    def __init__(self, settings: GroupSettings, scheduler: Scheduler | None = None,
                 record_log: RecordLog | None = None, owned: Iterable[int] | None = None) -> None:
        """`owned`: the partitions this node loads (they start LOADING); None = every
        partition, ACTIVE at once with nothing to load (unit tests, MemoryLog)."""
        self.settings = settings
        self._scheduler = scheduler
        self.record_log: RecordLog = record_log if record_log is not None else MemoryLog()
        self.shards: dict[int, Shard] = {}
        self._shard_by_group: dict[str, Shard] = {}
        self.owned: set[int] | None = None if owned is None else set(owned)

    @property
    def scheduler(self) -> Scheduler:
        if self._scheduler is None:  # the server's loop, known only once it runs
            from coordinator.runtime.timers import LoopScheduler

            self._scheduler = LoopScheduler(asyncio.get_running_loop())
        return self._scheduler

    def shard_for(self, group_id: str) -> Shard:
        """The shard owning `group_id` (the hash is cached: heartbeats route per request)."""
        shard = self._shard_by_group.get(group_id)
        if shard is None:
            partition = partition_for(group_id, self.settings.offsets_partitions)
            shard = self.shards.get(partition)
            if shard is None:
                shard = self._new_shard(partition)
            if len(self._shard_by_group) >= _SHARD_CACHE_LIMIT:
                self._shard_by_group.clear()
            self._shard_by_group[group_id] = shard
        return shard

    def _new_shard(self, partition: int) -> Shard:
        shard = self.shards[partition] = Shard(partition, self)
        if self.owned is not None:  # owned partitions load first; others are not ours
            shard.set_state(ShardState.LOADING if partition in self.owned else ShardState.UNLOADED)
        return shard

    def owned_shards(self) -> list[Shard]:
        """The shards of the owned partitions (created LOADING), in partition order."""
        return [self.shards.get(p) or self._new_shard(p) for p in sorted(self.owned or ())]

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.shard_for(group_id).groups.get(group_id)

    def all_shards(self) -> Iterator[Shard]:
        return iter(list(self.shards.values()))

    def unload(self, partition: int) -> None:
        """The hook for moving a partition to another node: see Shard.unload."""
        shard = self.shards.get(partition)
        if shard is None:
            shard = self.shards[partition] = Shard(partition, self)
        shard.unload()
        if self.owned is not None:
            self.owned.discard(partition)
