"""Members leaving a consumer group: by a heartbeat with epoch -1 (leave) or -2 (a static member's temporary
leave), or fenced when their session or rebalance timeout expires (GroupMetadataManager.consumerGroupLeave,
consumerGroupStaticMemberGroupLeave, consumerGroupFenceMember and the two timeout operations)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.groups.consumer import records as rec
from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.model import LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroupMember
from coordinator.groups.consumer.params import HeartbeatAnswer, HeartbeatParams
from coordinator.groups.consumer.regexes import GroupRegexes
from coordinator.groups.consumer.topic_view import TopicView, subscription_metadata
from coordinator.groups.result import GroupResult
from coordinator.records.types import Record


class ConsumerGroupOps(Protocol):
    """What leaving needs of heartbeat.ConsumerGroupOps (a Protocol: heartbeat imports this module)."""

    groups: dict[str, ConsumerGroup]
    topics: TopicView
    timers: Any
    clock: Any
    deadlines: dict[tuple[str, str, str], float]
    regexes: GroupRegexes

    def downgrade(self, group: ConsumerGroup, leaving: set[str], records: list[Record]) -> bool: ...

log = structlog.get_logger("coordinator.groups")


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """The key of a member's session timer and of its deadline."""
    return ("c-session", group_id, member_id)


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """removeMember: the member's current assignment, target assignment and subscription, deleted."""
    return [rec.new_consumer_group_current_assignment_tombstone_record(group_id, member_id),
            rec.new_consumer_group_target_assignment_tombstone_record(group_id, member_id),
            rec.new_consumer_group_member_subscription_tombstone_record(group_id, member_id)]


def leave(ops: ConsumerGroupOps, p: HeartbeatParams) -> tuple[HeartbeatAnswer, list[Record]]:
    group = ops.groups.get(p.group_id)
    if group is None:
        raise KafkaError(f"Consumer group {p.group_id} not found.", ErrorCode.group_id_not_found)
    answer = HeartbeatAnswer(p.member_id, p.member_epoch)
    if p.instance_id is None:
        member = group.members.get(p.member_id)
        if member is None:
            raise KafkaError(f"Member {p.member_id} is not a member of group {p.group_id}.",
                             ErrorCode.unknown_member_id)
        log.info("member left the consumer group", group=p.group_id, member=p.member_id)
        return answer, fence_records(ops, group, member)
    member = group.static_member(p.instance_id)
    if member is None:
        raise KafkaError(f"Instance id {p.instance_id} is unknown.", ErrorCode.unknown_member_id)
    if member.member_id != p.member_id:
        raise KafkaError(f"Static member {p.member_id} with instance id {p.instance_id} was fenced by member "
                         f"{member.member_id}.", ErrorCode.fenced_instance_id)
    if p.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        log.info("static member temporarily left the consumer group", group=p.group_id, member=p.member_id,
                 instance=p.instance_id)
        leaving = dataclasses.replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                      partitions_pending_revocation={})
        return (HeartbeatAnswer(member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH),
                [rec.new_consumer_group_current_assignment_record(group.group_id, leaving)])
    log.info("static member left the consumer group", group=p.group_id, member=p.member_id, instance=p.instance_id)
    return answer, fence_records(ops, group, member)


def fence_records(ops: ConsumerGroupOps, group: ConsumerGroup, member: ConsumerGroupMember) -> list[Record]:
    """consumerGroupFenceMember: see `fence_members_records`."""
    return fence_members_records(ops, group, [member])


def fence_members_records(ops: ConsumerGroupOps, group: ConsumerGroup,
                          members: list[ConsumerGroupMember]) -> list[Record]:
    """consumerGroupFenceMembers: when only classic-protocol members remain and the policy allows it, the group
    becomes a classic group (`ops.downgrade`); else the members' records are deleted, the subscription metadata
    is computed without them, the group epoch bumped (the others get a new target assignment at their next
    heartbeat); their timers stop."""
    if not members:
        return []
    records: list[Record] = []
    gid = group.group_id
    leaving = {m.member_id for m in members}
    if ops.downgrade(group, leaving, records):
        return records
    for member in members:
        records += member_tombstones(gid, member.member_id)
    remaining = [m for m in group.members.values() if m.member_id not in leaving]
    metadata = subscription_metadata(remaining, ops.topics, ops.regexes.resolve(group, remaining, ops.topics))
    if metadata != group.subscription_metadata:
        records.append(rec.new_consumer_group_subscription_metadata_record(gid, metadata))
    records.append(rec.new_consumer_group_epoch_record(gid, group.group_epoch + 1))
    for member_id in leaving:
        cancel_timers(ops, gid, member_id)
    return records


#: the timers a consumer-group member may have: its session, its rebalance timeout, and a classic member's
#: join and sync timeouts (scheduleConsumerGroupJoinTimeout / SyncTimeout)
MEMBER_TIMERS = ("c-session", "c-rebalance", "c-join", "c-sync")


def cancel_timers(ops: ConsumerGroupOps, group_id: str, member_id: str) -> None:
    ops.deadlines.pop(session_key(group_id, member_id), None)
    for kind in MEMBER_TIMERS:
        ops.timers.cancel((kind, group_id, member_id))


def fence(ops: ConsumerGroupOps, group_id: str, member_id: str, reason: str) -> GroupResult | None:
    group = ops.groups.get(group_id)
    member = group.members.get(member_id) if group is not None else None
    if group is None or member is None:
        return None
    log.info("member fenced from the consumer group", group=group_id, member=member_id, reason=reason)
    return GroupResult(fence_records(ops, group, member), _warn_on_failure(group_id, member_id))


def session_timer_fired(ops: ConsumerGroupOps, group_id: str, member_id: str) -> GroupResult | None:
    """The member's session timer: re-armed at the moved deadline, or the member is fenced."""
    key = session_key(group_id, member_id)
    deadline = ops.deadlines.get(key)
    if deadline is None:
        return None
    if deadline > ops.clock.now_ms():
        ops.timers.schedule_at(key, deadline, session_timer_fired, ops, group_id, member_id)
        return None
    ops.deadlines.pop(key, None)
    return fence(ops, group_id, member_id, "the member session expired")


def rebalance_timeout_fired(ops: ConsumerGroupOps, group_id: str, member_id: str, epoch: int) -> GroupResult | None:
    """The member did not revoke its partitions within its rebalance timeout: fenced, if still at that epoch."""
    group = ops.groups.get(group_id)
    member = group.members.get(member_id) if group is not None else None
    if member is None or member.member_epoch != epoch:
        return None
    return fence(ops, group_id, member_id, f"it failed to transition from epoch {epoch} within "
                                            f"{member.rebalance_timeout_ms}ms")


def _warn_on_failure(group_id: str, member_id: str) -> Callable[[BaseException | None], None]:
    def check(error: BaseException | None) -> None:
        if error is not None:
            log.warning("failed to fence a consumer group member", group=group_id, member=member_id,
                        error=str(error))
    return check
