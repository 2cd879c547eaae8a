"""The KIP-848 consumer groups of one shard: their dict, their replay and operations, and how a live write that
fails is taken back.

A shard holds classic groups (`Shard.groups`) and consumer groups (here) under one namespace: a group id is one
or the other. A consumer group is made by the replay of its first record; a "simple" classic group of the same
id (made only by offset commits) is dropped then, and an Empty classic group is deleted by a GroupMetadata
tombstone written with the consumer group's first records (GroupMetadataManager.maybeDeleteEmptyClassicGroup;
its committed offsets stay). A classic group with members keeps its id (GROUP_ID_NOT_FOUND to a consumer
heartbeat) unless it can be upgraded (runtime/online_migration.py). Classic-protocol members of a consumer group are
served by groups/consumer/classic_members.py.

Failed writes: each write's replay works on copies of the groups it touches (ConsumerGroupReplay); when the
write fails, the groups as they were before it come back, and later writes in flight no longer restore those
groups (what they saw was built on the failed write).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.groups.classic_member import JoinResult, JoinWaiter, SyncResult
from coordinator.groups.consumer.classic_members import ClassicMembers
from coordinator.groups.consumer.group import ConsumerGroup, ConsumerGroupState
from coordinator.groups.consumer.group_heartbeat import ConsumerGroupOps
from coordinator.groups.consumer.params import ConsumerGroupSettings, HeartbeatAnswer, HeartbeatParams
from coordinator.groups.consumer.replay import ConsumerGroupReplay, Saved
from coordinator.groups.consumer.topic_view import TopicView
from coordinator.groups.params import JoinParams, LeaveResult, LeavingMember, SyncParams
from coordinator.groups.result import GroupResult
from coordinator.records.types import GroupMetadataRecord, Record

if TYPE_CHECKING:
    from coordinator.groups.classic_group import ClassicGroup
    from coordinator.runtime.writes import PendingWrite


class Shard(Protocol):
    """What the consumer groups use of their runtime.shard.Shard (a Protocol: the shard imports this module)."""

    partition: int
    groups: dict[str, ClassicGroup]
    timers: Any
    scheduler: Any

    def write(self, records: list[Record]) -> PendingWrite: ...

log = structlog.get_logger(__name__)


class ConsumerGroups:
    def __init__(self, shard: Shard, settings: ConsumerGroupSettings, topics: TopicView) -> None:
        self.shard = shard
        self.groups: dict[str, ConsumerGroup] = {}
        self.replay = ConsumerGroupReplay(self.groups, self._created)
        self.ops = ConsumerGroupOps(self.groups, settings, topics, shard.timers, shard.scheduler,
                                    self._classic_is_busy, self._classic_tombstones)
        self.classic = ClassicMembers(self.ops)
        self._inflight: list[tuple[PendingWrite, Saved]] = []

    # --- the classic namespace -----------------------------------------------------------------------------

    def _classic_is_busy(self, group_id: str) -> bool:
        group = self.shard.groups.get(group_id)
        return group is not None and bool(group.members or group.pending_join_members)

    def _classic_tombstones(self, group_id: str) -> list[Record]:
        group = self.shard.groups.get(group_id)
        return [] if group is None or not group.protocol_type else [GroupMetadataRecord(group_id, None)]

    def _created(self, group_id: str) -> None:
        classic = self.shard.groups.get(group_id)
        if classic is not None and not classic.protocol_type and not classic.members:
            del self.shard.groups[group_id]  # a simple group: offsets only, no records of its own

    # --- writes --------------------------------------------------------------------------------------------

    def heartbeat(self, params: HeartbeatParams) -> tuple[HeartbeatAnswer, PendingWrite | None]:
        answer, records = self.ops.heartbeat(params)
        return answer, (self.shard.write(records) if records else None)

    def watch(self, pending: PendingWrite, saved: Saved) -> None:
        """Take the groups in `saved` back if `pending` fails (see the module docstring)."""
        entry = (pending, saved)
        self._inflight.append(entry)

        def settled(error: BaseException | None) -> None:
            try:
                index = self._inflight.index(entry)
            except ValueError:
                return
            del self._inflight[index]
            if error is None or not saved:
                return
            for _later, later_saved in self._inflight[index:]:
                for group_id in saved:
                    later_saved.pop(group_id, None)
            self.replay.restore(saved)
            log.info("consumer group write failed; groups restored", partition=self.shard.partition,
                     groups=sorted(saved))

        pending.add_callback(settled)

    # --- classic-protocol members (JoinGroup / SyncGroup / Heartbeat / LeaveGroup to a consumer group) ---------

    def join(self, group: ConsumerGroup, params: JoinParams, reply: JoinWaiter) -> GroupResult | None:
        try:
            return self.classic.join(group, params, reply)
        except KafkaError as exc:
            reply(JoinResult(exc.code, params.member_id))
            return None

    def sync(self, group: ConsumerGroup, params: SyncParams) -> SyncResult:
        try:
            return self.classic.sync(group, params)
        except KafkaError as exc:
            return SyncResult(exc.code)

    def leave(self, group: ConsumerGroup, leaving: list[LeavingMember]) -> tuple[LeaveResult, PendingWrite | None]:
        answer, records = self.classic.leave(group, leaving)
        return answer, (self.shard.write(records) if records else None)

    # --- admin ---------------------------------------------------------------------------------------------

    def deletion_error(self, group: ConsumerGroup) -> ErrorCode:
        """ConsumerGroup.validateDeleteGroup."""
        return ErrorCode.none if group.state is ConsumerGroupState.EMPTY else ErrorCode.non_empty_group

    def unload(self) -> None:
        self.groups.clear()
        self.ops.deadlines.clear()
        self.ops.resolved_at.clear()
        self.ops.regexes.forget()
        self._inflight.clear()

    def arm_after_load(self) -> None:
        """onLoaded: every member's session timer, and the rebalance timer of members revoking partitions."""
        for group in list(self.groups.values()):
            for member in group.members.values():
                self.ops.after_load(group, member)

