"""The KIP-932 share groups of one shard: their dict, their replay, ShareGroupHeartbeat, the members' session
timers, the share-state initialization that follows a heartbeat, and how a live write that fails is taken back.

A shard holds classic, consumer and share groups under one namespace: a group id is one kind or another. A
ShareGroupHeartbeat for the id of a classic or consumer group is GROUP_ID_NOT_FOUND ("Group X is not a share
group.", Kafka's GroupMetadataManager.shareGroup). Share groups change only by the replay of their records
(`ShareGroupRecord`, groups/share/model.py), live and on load.

After a heartbeat's records are durable, the subscribed partitions that have no share state yet
(`HeartbeatResult.to_initialize`) are initialized in the share coordinator (InitializeShareGroupState, start
offset -1, state epoch = the group epoch), and then `initialized(...)`'s records move them to the group's
initialized partitions, bumping the group epoch so that the next heartbeat assigns them (Kafka's
GroupCoordinatorService.persisterInitialize / initializeShareGroupState).

Sessions: each member has a session deadline (not a record), armed on the shard's timers at every heartbeat;
when it fires the member is fenced (`expire`: the leave's records) and the share partitions are told
(`ShareMembers.member_gone`: what the member held goes back, its share session ends).

Failed writes: the first record of a live write that touches a group saves a copy of it, and the write's journal
(runtime/journal.py) gets how to put the saved groups back: when the write fails, they come back as they were
(the same rule as the consumer groups', groups/consumer/replay.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import write_error_code
from coordinator.groups.share import heartbeat as share_heartbeat
from coordinator.groups.share.config_settings import ShareGroupSettings
from coordinator.groups.share.heartbeat import HeartbeatRequest, HeartbeatResult
from coordinator.groups.share.model import ShareGroup, TopicId, replay_all
from coordinator.records.types import Record, ShareGroupRecord
from storage.share_group_records import (
    ShareGroupMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMetadataKey,
)

if TYPE_CHECKING:
    from coordinator.groups.classic_group import ClassicGroup
    from coordinator.runtime.journal import Journal
    from coordinator.runtime.writes import PendingWrite

log = structlog.get_logger("coordinator.groups")

Saved = dict[str, ShareGroup | None]  # group id -> the group before the write (None: it did not exist)


class Shard(Protocol):
    """What share groups use of their runtime.shard.Shard (a Protocol: the shard imports this module)."""

    partition: int
    groups: dict[str, ClassicGroup]
    consumer_groups: dict[str, Any]
    timers: Any
    scheduler: Any
    journal: Journal | None  # the live write being replayed (None: loading)

    def write(self, records: list[Record]) -> PendingWrite: ...


class ShareMembers(Protocol):
    """The share partitions' side (coordinator/share/runtime/share_partitions.py), told of members and of the
    share state to initialize."""

    def member_gone(self, group_id: str, member_id: str) -> None: ...

    def initialize_state(self, group_id: str, state_epoch: int, partitions: Mapping[TopicId, frozenset[int]],
                         done: Callable[[dict[TopicId, frozenset[int]]], None]) -> None: ...

    def delete_state(self, group_id: str, partitions: Mapping[TopicId, frozenset[int]]) -> None: ...

    def forget(self, group_id: str, topic_id: TopicId) -> None: ...


class ShareTopics(Mapping[str, tuple[TopicId, int]]):
    """The metadata image as share groups read it: user topic name -> (topic id, partition count), over the data
    plane's TopicCatalog (duck-typed: `get`, `all`)."""

    def __init__(self, catalog: Any = None) -> None:
        self.catalog = catalog

    def __getitem__(self, name: str) -> tuple[TopicId, int]:
        info = None if self.catalog is None else self.catalog.get(name)
        if info is None or info.internal:
            raise KeyError(name)
        return info.topic_id, info.partitions

    def __iter__(self) -> Iterator[str]:
        return iter([] if self.catalog is None else [t.name for t in self.catalog.all() if not t.internal])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _copy(group: ShareGroup) -> ShareGroup:
    twin = copy.copy(group)
    twin.members, twin.target = dict(group.members), dict(group.target)
    twin.session_deadlines = dict(group.session_deadlines)
    return twin


class ShareGroups:
    def __init__(self, shard: Shard, settings: ShareGroupSettings) -> None:
        self.shard = shard
        self.settings = settings
        self.groups: dict[str, ShareGroup] = {}
        self.topics: Mapping[str, tuple[TopicId, int]] = ShareTopics()
        self.members: ShareMembers | None = None  # set when the share partitions exist (coordinator/app wiring)
        self.settings_for: Callable[[str], ShareGroupSettings] = lambda _group_id: self.settings
        self._journal: Journal | None = None  # the live write whose records were replayed last
        self._saved: Saved | None = None  # the groups as they were before that write
        self._deleting: dict[str, dict[TopicId, frozenset[int]]] = {}  # deleted by the write being made

    # --- replay ------------------------------------------------------------------------------------------

    def replay(self, record: ShareGroupRecord) -> None:
        """Apply one share-group record (live writes, into the shard's open journal, and loading alike)."""
        group_id = record.key.group
        journal = self.shard.journal
        if journal is not self._journal:  # the first record of another write (or of loading)
            self._journal = journal
            self._saved = None
            if journal is not None:
                saved: Saved = {}
                self._saved = saved
                journal.add(partial(self.restore, saved))
        saving = self._saved
        if saving is not None and group_id not in saving:
            group = self.groups.get(group_id)
            saving[group_id] = None if group is None else _copy(group)
        replay_all(self.groups, ((record.key, record.value),))

    def restore(self, saved: Saved) -> None:
        """Take back a failed write: each group it touched as it was before it."""
        for group_id, group in saved.items():
            if group is None:
                self.groups.pop(group_id, None)
            else:
                self.groups[group_id] = group
        if saved:
            log.info("share group write failed; groups restored", partition=self.shard.partition,
                     groups=sorted(saved))

    # --- ShareGroupHeartbeat -----------------------------------------------------------------------------

    def not_share_group(self, group_id: str) -> bool:
        """Whether the id is a classic or consumer group's (a simple group of offsets only is not in the way)."""
        classic = self.shard.groups.get(group_id)
        return group_id in self.shard.consumer_groups or (
            classic is not None and bool(classic.protocol_type or classic.members))

    def heartbeat(self, request: HeartbeatRequest) -> tuple[HeartbeatResult, PendingWrite | None]:
        """The answer and the write it must wait for (None: nothing written)."""
        if self.not_share_group(request.group_id):
            return HeartbeatResult(ErrorCode.group_id_not_found,
                                   f"Group {request.group_id} is not a share group."), None
        group = self.groups.get(request.group_id)
        settings = self.settings_for(request.group_id)
        now = self.shard.scheduler.wall_ms()
        result = share_heartbeat.heartbeat(group, request, self.topics, settings, now)
        if result.error is not ErrorCode.none:
            return result, None
        write = self.shard.write([ShareGroupRecord(k, v) for k, v in result.records]) if result.records else None
        member_id = request.member_id
        if request.member_epoch == share_heartbeat.LEAVE_EPOCH:
            self.shard.timers.cancel(("share", request.group_id, member_id))
            if self.members is not None:
                self.members.member_gone(request.group_id, member_id)
        else:
            self._arm(request.group_id, member_id, settings.session_timeout_ms, now)
        if result.to_initialize and write is not None:
            pending, group_id = dict(result.to_initialize), request.group_id
            write.add_callback(lambda error: None if error is not None else self._initialize(group_id, pending))
        return result, write

    def _arm(self, group_id: str, member_id: str, timeout_ms: int, now_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        group.session_deadlines[member_id] = now_ms + timeout_ms
        self.shard.timers.schedule(("share", group_id, member_id), timeout_ms, self._session_expired, group_id,
                                   member_id)

    def _session_expired(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        deadline = group.session_deadlines.get(member_id, 0)
        records = share_heartbeat.expire(group, member_id, max(deadline, self.shard.scheduler.wall_ms()),
                                         self.topics, self.settings_for(group_id))
        if not records:
            return
        log.info("share group member session expired", group=group_id, member=member_id)
        self.shard.write([ShareGroupRecord(k, v) for k, v in records])
        if self.members is not None:
            self.members.member_gone(group_id, member_id)

    def _initialize(self, group_id: str, partitions: dict[TopicId, frozenset[int]]) -> None:
        group = self.groups.get(group_id)
        if group is None or self.members is None:
            return

        def done(initialized: dict[TopicId, frozenset[int]]) -> None:
            current = self.groups.get(group_id)
            if current is None or not initialized:
                return
            records = share_heartbeat.initialized(current, initialized, self.topics)
            self.shard.write([ShareGroupRecord(k, v) for k, v in records])

        self.members.initialize_state(group_id, group.group_epoch, partitions, done)

    def arm_after_load(self) -> None:
        """onLoaded: every member's session starts again (deadline now + session timeout); partitions left
        initializing by a crash are initialized again."""
        now = self.shard.scheduler.wall_ms()
        for group_id, group in list(self.groups.items()):
            settings = self.settings_for(group_id)
            for member_id in list(group.members):
                self._arm(group_id, member_id, settings.session_timeout_ms, now)
            pending = {info.topic_id: frozenset(info.partitions)
                       for info in group.partition_state.initializing_topics if info.partitions}
            if pending:
                self._initialize(group_id, pending)

    # --- DeleteGroups ------------------------------------------------------------------------------------

    def deletion(self, group_id: str) -> tuple[ErrorCode, list[Record]] | None:
        """DeleteGroups of a share group (ShareGroup.validateDeleteGroup, createGroupTombstoneRecords): only an
        Empty one goes, by its records' tombstones, the group's own last (its replay deletes the group). None:
        no share group of that id."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return ErrorCode.non_empty_group, []
        self._deleting[group_id] = group.state_partitions()
        keys: list[Any] = [ShareGroupTargetAssignmentMemberKey(group_id, m) for m in group.target]
        keys += [ShareGroupTargetAssignmentMetadataKey(group_id), ShareGroupStatePartitionMetadataKey(group_id),
                 ShareGroupMetadataKey(group_id)]
        return ErrorCode.none, [ShareGroupRecord(key, None) for key in keys]

    def after_deletion(self, write: PendingWrite) -> None:
        """Once the deletions decided since the last call are durable, the groups' share state goes from the
        share coordinator (DeleteShareGroupState), and their share partitions from this node (Kafka deletes the
        state first: a failure here leaves it in __share_group_state, logged, until the group is made again)."""
        deleting, self._deleting = self._deleting, {}

        def written(error: BaseException | None) -> None:
            if error is not None or self.members is None:
                return
            for group_id, state in deleting.items():
                if state and group_id not in self.groups:
                    self.members.delete_state(group_id, state)

        if deleting:
            write.add_callback(written)

    # --- DeleteShareGroupOffsets ---------------------------------------------------------------------------

    def offsets_deletion(self, group_id: str, topic_ids: set[TopicId]
                         ) -> tuple[tuple[ErrorCode, str] | None, dict[TopicId, frozenset[int]]]:
        """What DeleteShareGroupOffsets may delete (GroupMetadataManager.initiateDeleteShareGroupOffsets): the
        refusal (an unknown group, one of another kind, one with members), or the share-state partitions of
        `topic_ids` the group has."""
        group = self.groups.get(group_id)
        if group is None:
            return (ErrorCode.group_id_not_found, f"Group {group_id} not found."), {}
        if group.members:
            return (ErrorCode.non_empty_group, f"Share group {group_id} is not empty."), {}
        return None, {t: ps for t, ps in group.state_partitions().items() if t in topic_ids}

    async def offsets_deleted(self, group_id: str, topic_ids: list[TopicId]) -> ErrorCode | None:
        """Their share state is deleted: the topics leave the group's partitions with state (a
        ShareGroupStatePartitionMetadata record), answered once durable (None, or the write's error)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        state = group.partition_state
        gone = set(topic_ids)
        value = replace(state,
                        initializing_topics=tuple(i for i in state.initializing_topics if i.topic_id not in gone),
                        initialized_topics=tuple(i for i in state.initialized_topics if i.topic_id not in gone))
        write = self.shard.write([ShareGroupRecord(ShareGroupStatePartitionMetadataKey(group_id), value)])
        if self.members is not None:
            for topic_id in topic_ids:
                self.members.forget(group_id, topic_id)
        try:
            await write
        except Exception as exc:
            return write_error_code(exc)
        return None

    # --- AlterShareGroupOffsets ----------------------------------------------------------------------------

    def offsets_alteration(self, group_id: str) -> tuple[ErrorCode, str] | int:
        """Whether AlterShareGroupOffsets may reset the group's start offsets: the refusal (a group of another kind,
        one with members), else the state epoch to initialize the share state with (above any used before)."""
        if self.not_share_group(group_id):
            return ErrorCode.group_id_not_found, f"Group {group_id} is not a share group."
        group = self.groups.get(group_id)
        if group is not None and group.members:
            return ErrorCode.non_empty_group, f"Share group {group_id} is not empty."
        return (0 if group is None else group.group_epoch) + 1

    async def offsets_altered(self, group_id: str, done: dict[TopicId, frozenset[int]]) -> ErrorCode | None:
        """The share state of `done` was initialized at the new start offsets: they are the group's initialized
        partitions (the group is made if it did not exist), once durable (None, or the write's error)."""
        group = self.groups.get(group_id) or ShareGroup(group_id)
        write = self.shard.write([ShareGroupRecord(k, v) for k, v in share_heartbeat.initialized(group, done,
                                                                                                 self.topics)])
        if self.members is not None:
            for topic_id in done:
                self.members.forget(group_id, topic_id)
        try:
            await write
        except Exception as exc:
            return write_error_code(exc)
        return None

    def unload(self) -> None:
        self.groups.clear()
        self._journal = self._saved = None
