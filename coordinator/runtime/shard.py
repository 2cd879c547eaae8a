"""Shards: one per __consumer_offsets partition, owning its groups, timers and writes.

A group lives in shard `partition_for(group_id, offsets.topic.num.partitions)`. All
shards run on one event loop; each has its own `KeyedTimers` (over the shared scheduler)
so that timers of one shard never see another's keys, and its own `write`.

`Shard.write(records)` is the durability seam ("records are the truth") and the one
caller of `RecordLog.append` (with `write_with`, its form for transactional writes and
markers): it applies the records to the shard's state through `replay_all` -- the one
function loading uses -- hands them to the log and returns a
`PendingWrite`, which both the domain (synchronous callbacks, run the moment the log
completes it) and handlers (`await`) can wait on. Whatever depends on the records being
durable -- an OffsetCommit answer, the Stable transition and every SyncGroup answer, a
LeaveGroup or DeleteGroups answer -- waits for it. Group operations decide and return
records; only the shard writes them, as Kafka's runtime appends what an operation's
CoordinatorResult holds:

* JoinGroup, SyncGroup and LeaveGroup come in through `join`, `sync` and `leave`, which
  run the Membership operation and write the `GroupResult` it returns (`write_result`:
  the records, then its `on_written` once the write settles -- the Stable transition and
  the SyncGroup answers, a replaced static member's answer -- and whatever that returns);
  `leave` hands the write to the handler, whose answer waits for it. `heartbeat` writes
  nothing: it is Membership.heartbeat itself (the hot path, no extra call).
* Timers fire through the shard: its KeyedTimers give what a timer operation returns
  (a join completion, a session or sync expiry) to `write_result`.
* DeleteGroups and expiry: `delete_groups` and `expire` write what
  groups/admin.group_tombstones and groups/expiry.expiry_records decide.
`MemoryLog` keeps the records in memory and completes each write on the next loop turn
(or when a test says so); runtime.durable_log.DurableLog is the real one.

What replay does with each record, live and on load:

* OffsetCommit records (and their tombstones) change the OffsetStore, live and on load. Those of a
  transactional batch (TxnOffsetCommit) stay pending per producer until the producer's marker
  (runtime/txn_offsets.py, offsets/pending.py).
* A GroupMetadata tombstone removes the group, live and on load: it goes Dead, its
  timers stop (Rebalancer.remove_group). DeleteGroups and expiry delete only this way.
* KIP-848 consumer-group records (ConsumerGroupRecord) go to `self.consumer_replay`
  (groups/consumer/replay.py), live and on load: they alone change consumer groups; KIP-932
  share-group records (ShareGroupRecord) to `self.share` (runtime/share_shard.py) likewise.
* A GroupMetadata value rebuilds the group on load (ClassicGroup.from_metadata). Live,
  its replay is a no-op: as in Kafka (CoordinatorResult with replayRecords=false for
  classic groups), the state machine changes the live ClassicGroup itself (join, sync,
  leave, timers) and the record only describes the result.

Failed writes (runtime/journal.py; the same text in docs/DESIGN.md, "Taking back a failed write"):

* Every live write -- `write`, a TxnOffsetCommit or a transaction marker (`write_with`) -- replays at once
  into its journal, then is in flight (`inflight`, in write order) until the log settles it. The log makes
  the writes durable in that order: a write is durable only after every earlier one is.
* A write that fails fails every later write of the shard still in flight. They are lost with it or must be:
  a failed flush fails every append in it and after it and the log cuts itself back to its last good position
  (storage/log_repair.py; the PostgreSQL log fails every later append); a write the log refuses alone (too
  large, cannot be encoded: `PendingWrite.refuse`) takes the later ones with it, which fail with
  EarlierWriteFailed (COORDINATOR_NOT_AVAILABLE, retriable) before they reach the log. The journals of the failed
  write and of every later one are reverted, newest first -- as Kafka reverts its snapshot registry to the
  failed batch's base offset -- so the state is again a replay of exactly the records that are durable, and
  only then are the writes' waiters told, the failed one's first, in write order. What they write then comes
  after, on that state.
* A journal holds what the replay changed: the offsets each commit or tombstone replaced (OffsetStore), the
  pending transactional offsets a TxnOffsetCommit added, a commit made stale, a tombstone removed or a marker
  ended or committed (rules/pending_offsets.py), the classic groups a tombstone removed (Rebalancer.restore_group:
  the same object, its state and session timers) or a commit made (a simple group), the consumer groups as they
  were before their records (groups/consumer/replay.py), the share groups likewise (runtime/share_shard.py), and,
  from the operation before its records, the classic group an online downgrade put in place
  (runtime/online_migration.py). OffsetFetch and DescribeGroups answer as before the write.
* Not in a journal: the in-memory state machine a classic group's GroupMetadata value describes. That state is
  the truth and the record its copy; its writers react to the failure themselves (a failed assignment write makes
  the members rejoin, a failed static-member replacement is reverted, other failures are logged), as Kafka's
  classic groups do. A classic group is not restored, nor a simple one dropped, over what a JoinGroup made of
  that id in memory meanwhile.
* An unload drops the state and fails the writes in flight (NOT_COORDINATOR) without taking anything back.

A shard is LOADING (its groups answer COORDINATOR_LOAD_IN_PROGRESS), ACTIVE, or
UNLOADED (NOT_COORDINATOR: another node owns it, or it was never ours).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from functools import partial
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import NotCoordinator
from coordinator.groups.admin import deletion_error, group_tombstones
from coordinator.groups.classic_group import ClassicGroup, GroupState
from coordinator.groups.classic_member import JoinResult, JoinWaiter, SyncResult, SyncWaiter
from coordinator.groups.consumer.expiry import expiry_records as consumer_expiry_records
from coordinator.groups.consumer.params import HeartbeatAnswer, HeartbeatParams
from coordinator.groups.consumer.records import consumer_group_tombstones
from coordinator.groups.consumer.topic_view import NO_TOPICS, TopicView
from coordinator.groups.context import GroupContext
from coordinator.groups.expiry import expiry_records
from coordinator.groups.membership import Membership
from coordinator.groups.params import JoinParams, LeaveResult, LeavingMember, SyncParams
from coordinator.groups.rebalance import RemovedGroup
from coordinator.groups.result import GroupResult
from coordinator.groups.settings import GroupSettings
from coordinator.groups.stats import GroupStats
from coordinator.offsets.manager import offset_tombstones
from coordinator.offsets.store import OffsetStore
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, Record, ShareGroupRecord
from coordinator.runtime.consumer_shard import ConsumerGroups
from coordinator.runtime.journal import Journal
from coordinator.runtime.online_migration import ShardMigration
from coordinator.runtime.share_shard import ShareGroups
from coordinator.runtime.timers import KeyedTimers, Scheduler
from coordinator.runtime.txn_offsets import ShardTxnOffsets
from coordinator.runtime.writes import PendingWrite, RecordLog

log = structlog.get_logger(__name__)


class ShardState(Enum):
    LOADING = "loading"
    ACTIVE = "active"
    UNLOADED = "unloaded"


_STATE_ERRORS = {ShardState.LOADING: ErrorCode.coordinator_load_in_progress,
                 ShardState.UNLOADED: ErrorCode.not_coordinator}


class Shard:
    """The groups of one offsets partition, their timers and their writes."""

    def __init__(self, partition: int, settings: GroupSettings, scheduler: Scheduler, record_log: RecordLog,
                 stats: GroupStats | None = None, topics: TopicView | None = None) -> None:
        self.partition = partition
        self.settings = settings
        self.scheduler = scheduler
        self.record_log = record_log
        self.state = ShardState.ACTIVE
        self.error: ErrorCode | None = None  # the answer for this shard's groups when not ACTIVE
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets = OffsetStore()
        self.inflight = self.offsets.inflight  # every write of the shard until it settles, with its journal
        self.journal: Journal | None = None  # the write being made (open_journal); None: replay is loading
        self.txn = ShardTxnOffsets(self)  # TxnOffsetCommit's writes and the transaction markers
        self.timers = KeyedTimers(self.scheduler, on_error=self._timer_failed, on_result=self.write_result)
        self.membership = Membership(GroupContext(self.groups, settings, scheduler, self.timers, stats))
        self.consumer = ConsumerGroups(self, settings.consumer, topics if topics is not None else NO_TOPICS)
        self.consumer_groups = self.consumer.groups
        self.consumer_replay = self.consumer.replay.apply  # the replay of KIP-848 records, live and on load
        self.consumer.ops.migration = ShardMigration(self)
        self.share = ShareGroups(self, settings.share)  # KIP-932 share groups (runtime/share_shard.py)
        # Heartbeat, the hot path: the classic operation itself; a group id that is not a classic group's goes on
        # to the consumer groups' classic-protocol members
        self.membership.other_heartbeat = self._consumer_group_heartbeat
        self.heartbeat = self.membership.heartbeat

    def set_state(self, state: ShardState) -> None:
        self.state = state
        self.error = _STATE_ERRORS.get(state)

    # --- records ------------------------------------------------------------------------

    def write(self, records: list[Record], tails: list[bytes] | None = None) -> PendingWrite:
        """Apply `records` through `replay_all`, append them; the result completes when durable
        (a failed one is taken back first, with every later write in flight: see the module
        docstring). `tails`, if given, must be log_codec.encode_tails(records) (the log uses them)."""
        if self.state is ShardState.UNLOADED:
            pending = PendingWrite(records, tails)
            pending.resolve(NotCoordinator(f"partition {self.partition} is not loaded here"))
            return pending
        journal = self.journal
        if journal is None:
            journal = self.journal = Journal(records)
        else:  # changes the operation made before its records (the online downgrade) are in it already
            journal.records = records
        try:
            self.replay_all(records)
        except BaseException:  # records that contradict the state (a bug): nothing of them stays
            self.journal = None
            self.inflight.revert(journal)
            raise
        self.journal = None
        pending = PendingWrite(records, tails)
        self.inflight.add(pending, journal)
        self._append(pending)
        return pending

    def write_applied(self, records: list[Record], tails: list[bytes], replaced: list[bytes | None]) -> PendingWrite:
        """`write` for OffsetCommit records whose replay a fast lane (coordinator/fastlane/) made itself: the store
        changed as `replay_all` changes it, `replaced` filled as a journal's offsets are (the packed value each
        record replaced), and nothing else to replay (no open transaction of the group, no group to create, no
        journal open): in flight with its journal and appended, as `write` does."""
        journal = Journal(records)
        journal.offsets = replaced
        pending = PendingWrite(records, tails)
        self.inflight.add(pending, journal)
        self._append(pending)
        return pending

    def _append(self, pending: PendingWrite) -> None:
        try:
            self.record_log.append(self.partition, pending)
        except Exception as exc:  # e.g. the log is closed: fail the write, never the caller
            pending.resolve(exc)

    def open_journal(self) -> Journal:
        """The journal of the write being made (runtime/journal.py), opened if none is: what an operation changes
        before it hands its records to `write` (the online downgrade's classic group) goes here, and the write
        carries it. While records are replayed live it is theirs: None means loading."""
        journal = self.journal
        if journal is None:
            journal = self.journal = Journal()
        return journal

    def write_with(self, pending: PendingWrite, replay: Callable[..., object], *args: Any) -> PendingWrite:
        """A live write whose records `replay(*args)` applies (a transactional write, a marker: runtime/txn_offsets.py),
        as `write` does with `replay_all`: into the open journal, then in flight and to the log."""
        journal = self.open_journal()
        try:
            replay(*args)
        except BaseException:
            self.journal = None
            self.inflight.revert(journal)
            raise
        self.journal = None
        self.inflight.add(pending, journal)
        self._append(pending)
        return pending

    def replay(self, record: Record) -> None:
        """Apply one record: `replay_all` of one."""
        self.replay_all((record,))

    def replay_all(self, records: Iterable[Record]) -> None:
        """Apply records to this shard's state, in order: the one path for live writes (the
        shard's open journal, `self.journal`, gets what they change: runtime/journal.py) and
        loading (no journal).

        Runs of OffsetCommit records go to the store in one `apply_all` call; the common
        case, a write of commits only, is one run.
        """
        journal = self.journal
        run: list = []
        for record in records:
            if type(record) is OffsetCommitRecord:
                run.append(record)
                continue
            if run:
                self._replay_offsets(run, journal)
                run = []
            if type(record) is ShareGroupRecord:
                self.share.replay(record)
                continue
            if type(record) is not GroupMetadataRecord:
                self.consumer_replay(record)
                continue
            group_id, value = record.group_id, record.value
            if value is not None:
                if journal is None:  # live, classic groups change in memory first; the record describes them
                    self.groups[group_id] = ClassicGroup.from_metadata(group_id, value)
                continue
            group = self.groups.get(group_id)
            if group is not None:
                removed = self.membership.remove_group(group)
                if journal is not None:
                    journal.add(partial(self._restore_group, removed))
        if run:
            self._replay_offsets(run, journal)

    def _restore_group(self, removed: RemovedGroup) -> None:
        """Take back a tombstone's removal of a classic group: the same group object, its state and session
        timers (Rebalancer.restore_group) -- unless a group of that id was made in memory meanwhile (a JoinGroup),
        which stays (classic groups' in-memory state machine is their truth)."""
        group_id = removed.group.group_id
        if group_id not in self.groups:
            self.membership.restore_group(removed)
            log.info("group deletion not written; group restored", partition=self.partition, group=group_id)

    # --- operations that write --------------------------------------------------------

    def write_result(self, result: GroupResult | None) -> PendingWrite | None:
        """Write what a group operation returned; its `on_written` runs once the write settles,
        and what that returns is written in turn. None (nothing to write) for None."""
        if result is None:
            return None
        pending = self.write(result.records)
        on_written = result.on_written
        if on_written is not None:
            def written(error: BaseException | None) -> None:
                self.write_result(on_written(error))

            pending.add_callback(written)
        return pending

    def join(self, params: JoinParams, reply: JoinWaiter) -> None:
        """JoinGroup: `reply` gets the answer, now or when the join completes. An empty KIP-848 consumer group of
        that id is replaced (its tombstones first: GroupMetadataManager.classicGroupJoinToClassicGroup); one with
        members takes the member in as a classic-protocol member (classicGroupJoinToConsumerGroup)."""
        consumer = self.consumer_groups.get(params.group_id)
        if consumer is not None:
            error = self.membership.join_request_error(params)
            if error is not None:
                reply(JoinResult(error, params.member_id))
                return
            if not consumer.is_empty:
                self.write_result(self.consumer.join(consumer, params, reply))
                return
            self.write(consumer_group_tombstones(consumer))
        self.write_result(self.membership.join(params, reply))

    def sync(self, params: SyncParams, reply: SyncWaiter) -> None:
        """SyncGroup: `reply` gets the answer, now or once the leader's assignment is written."""
        consumer = self.consumer_groups.get(params.group_id)
        if consumer is not None and params.group_id:
            error = self.membership.sync_request_error(params)
            if error is None and consumer.is_empty:
                error = ErrorCode.unknown_member_id
            reply(SyncResult(error) if error is not None else self.consumer.sync(consumer, params))
            return
        self.write_result(self.membership.sync(params, reply))

    def _consumer_group_heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                                  generation_id: int) -> ErrorCode:
        """A Heartbeat for a group id no classic group has (Membership.other_heartbeat): a consumer group's
        classic-protocol member's, else UNKNOWN_MEMBER_ID as for any unknown group."""
        consumer = self.consumer_groups.get(group_id)
        if consumer is not None:
            return self.consumer.classic.heartbeat(consumer, member_id, instance_id, generation_id)
        return ErrorCode.unknown_member_id

    def leave(self, group_id: str, leaving: list[LeavingMember]) -> tuple[LeaveResult, PendingWrite | None]:
        """LeaveGroup: the answer, and the write it must wait for (None: nothing written)."""
        consumer = self.consumer_groups.get(group_id)
        if consumer is not None and group_id:
            return self.consumer.leave(consumer, leaving)
        answer, result = self.membership.leave(group_id, leaving)
        return answer, self.write_result(result)

    def consumer_heartbeat(self, params: HeartbeatParams) -> tuple[HeartbeatAnswer, PendingWrite | None]:
        """ConsumerGroupHeartbeat (KIP-848): the answer, and the write it must wait for (None: nothing written)."""
        return self.consumer.heartbeat(params)

    def delete_groups(self, group_ids: Iterable[str]) -> tuple[dict[str, ErrorCode], PendingWrite | None]:
        """GroupCoordinatorShard.deleteGroups: each Empty group's tombstones in one write
        (their replay deletes the groups); the answer per group, and the write to wait for."""
        results: dict[str, ErrorCode] = {}
        records: list[Record] = []
        for group_id in group_ids:
            share = self.share.deletion(group_id) if self.error is None else None
            if share is not None:  # a share group's
                results[group_id], tombstones = share
                records += tombstones
                continue
            consumer = self.consumer_groups.get(group_id)
            if consumer is not None and self.error is None:
                code = results[group_id] = self.consumer.deletion_error(consumer)
                if code is ErrorCode.none:
                    records += offset_tombstones(self.offsets, group_id) + consumer_group_tombstones(consumer)
                continue
            code = results[group_id] = self.error or deletion_error(self.groups.get(group_id))
            if code is ErrorCode.none:
                records += group_tombstones(self.offsets, group_id)
        if not records:
            return results, None
        log.info("groups deleted", partition=self.partition,
                 groups=[g for g, code in results.items() if code is ErrorCode.none])
        write = self.write(records)
        self.share.after_deletion(write)
        return results, write

    def expire(self, now_ms: int, retention_ms: int) -> tuple[int, int, PendingWrite | None]:
        """One KIP-211 cleanup pass (groups/expiry.py): (offsets expired, groups deleted, the write)."""
        if self.state is not ShardState.ACTIVE:
            return 0, 0, None
        records, offsets, groups = expiry_records(self.groups, self.offsets, now_ms, retention_ms)
        consumer_records, consumer_offsets, consumer_groups = consumer_expiry_records(
            self.consumer_groups, self.offsets, now_ms, retention_ms)
        records += consumer_records
        offsets += consumer_offsets
        groups += consumer_groups
        if not records:
            return 0, 0, None
        return offsets, groups, self.write(records)

    def _replay_offsets(self, records: list, journal: Journal | None) -> None:
        store = self.offsets
        store.apply_all(records, None if journal is None else journal.offsets, self._offset_committed_to)
        txn = store.txn
        if txn.by_group:  # open transactions: a commit makes their older offsets of the key stale, a tombstone
            undo = None if journal is None else journal.add  # removes them (OffsetMetadataManager.replay)
            for group, topic, partition, value in records:
                if group in txn.by_group:
                    if value is None:
                        txn.deleted((group, topic, partition), undo)
                    else:
                        txn.committed((group, topic, partition), undo)

    def _offset_committed_to(self, group_id: str) -> None:
        if group_id not in self.groups and group_id not in self.consumer_groups:
            # OffsetMetadataManager.replay: offsets without a group make a "simple"
            # group, an Empty classic group without protocol type
            group = self.groups[group_id] = ClassicGroup(group_id, self.scheduler.wall_ms())
            journal = self.journal
            if journal is not None:
                journal.add(partial(self._drop_simple_group, group))

    def _drop_simple_group(self, group: ClassicGroup) -> None:
        """Take back the simple group a commit made -- unless members joined it in memory meanwhile."""
        if self.groups.get(group.group_id) is group and not group.protocol_type and not group.members \
                and not group.pending_join_members:
            del self.groups[group.group_id]

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
        self.consumer.unload()
        self.share.unload()
        writes = self.inflight.drop()  # the state goes with the partition: nothing to take back
        self.journal = None
        self.offsets = OffsetStore()
        self.inflight = self.offsets.inflight
        for pending in writes:
            pending.resolve(NotCoordinator(f"partition {self.partition} was unloaded"))
        log.info("partition unloaded", partition=self.partition)

    def _timer_failed(self, key: Any, exc: BaseException) -> None:
        log.error("group timer failed", partition=self.partition, key=str(key), exc_info=exc)
