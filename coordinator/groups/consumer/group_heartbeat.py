"""ConsumerGroupHeartbeat: Kafka's GroupMetadataManager.consumerGroupHeartbeat, one step at a time.

An operation never changes a group: it reads the group, decides, and returns the records that describe the
change (`ConsumerGroupOps.heartbeat` -> (answer, records)); the shard writes them and their replay changes the
group (records are the truth, as Kafka's consumer groups, whose records are replayed live). The three steps of
a heartbeat, as in Kafka:

1. the member is created or updated (ConsumerGroupMemberMetadata); when its subscription changed, or the topics
   it subscribes to did, the subscription metadata (ConsumerGroupPartitionMetadata) and the group epoch
   (ConsumerGroupMetadata) move;
2. when the group epoch is past the target assignment's, a new target assignment is computed with the
   preferred server assignor (ConsumerGroupTargetAssignmentMember of each changed member, then
   ConsumerGroupTargetAssignmentMetadata);
3. the member's current assignment is reconciled towards its target (ConsumerGroupCurrentMemberAssignment):
   partitions are revoked before others are handed out, and a partition is given only once no member owns it.

Timers (not persisted; armed again after a load by `ConsumerGroupOps.arm_after_load`): a session per member
(`group.consumer.session.timeout.ms`, moved by every heartbeat in O(1): a deadline, re-armed lazily), and a
rebalance timeout while a member holds partitions it must revoke. Either fences the member (leaving.py).
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.groups.consumer import records as rec
from coordinator.groups.consumer.group import ConsumerGroup, reconciled_to
from coordinator.groups.consumer.leaving import (
    leave,
    member_tombstones,
    rebalance_timeout_fired,
    session_key,
    session_timer_fired,
)
from coordinator.groups.consumer.model import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroupMember,
    MemberState,
    TopicMetadata,
)
from coordinator.groups.consumer.params import ConsumerGroupSettings, HeartbeatAnswer, HeartbeatParams
from coordinator.groups.consumer.reconciliation import next_member_state
from coordinator.groups.consumer.regexes import Describable, GroupRegexes, Resolved
from coordinator.groups.consumer.subscription import subscribed_topic_ids
from coordinator.groups.consumer.target_assignment import build_target_assignment
from coordinator.groups.consumer.topic_view import TopicView, compile_regex, members_with, subscription_metadata
from coordinator.records.types import Record

log = structlog.get_logger("coordinator.groups")
_STABLE = MemberState.STABLE


def _error(code: ErrorCode, message: str) -> KafkaError:
    return KafkaError(message, code)


def validate_request(p: HeartbeatParams, settings: ConsumerGroupSettings) -> None:
    """throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    bad = ErrorCode.invalid_request
    if p.group_id == "":
        raise _error(bad, "GroupId can't be empty.")
    if p.instance_id == "":
        raise _error(bad, "InstanceId can't be empty.")
    if p.rack_id == "":
        raise _error(bad, "RackId can't be empty.")
    epoch = p.member_epoch
    if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if p.member_id == "":
            raise _error(bad, "MemberId can't be empty.")
    elif epoch == JOIN_GROUP_MEMBER_EPOCH:
        if p.rebalance_timeout_ms == -1:
            raise _error(bad, "RebalanceTimeoutMs must be provided in first request.")
        if p.owned is None or p.owned:
            raise _error(bad, "TopicPartitions must be empty when (re-)joining.")
        if not p.subscribed_topic_names and not p.subscribed_topic_regex:
            raise _error(bad, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if p.member_id == "":
            raise _error(bad, "MemberId can't be empty.")
        if p.instance_id is None:
            raise _error(bad, "InstanceId can't be null.")
    else:
        raise _error(bad, "MemberEpoch is invalid.")
    if p.subscribed_topic_regex is not None and p.subscribed_topic_regex != "":
        compile_regex(p.subscribed_topic_regex)
    assignors = settings.assignors or {}
    if p.server_assignor is not None and p.server_assignor not in assignors:
        raise _error(ErrorCode.unsupported_assignor,
                     f"ServerAssignor {p.server_assignor} is not supported. Supported assignors: "
                     f"{', '.join(assignors)}.")


def _is_subset(owned: Assignment | None, target: Assignment) -> bool:
    if owned is None:
        return False
    for topic_id, partitions in owned.items():
        have = target.get(topic_id)
        if have is None or not partitions <= have:
            return False
    return True


def check_member_epoch(member: ConsumerGroupMember, received: int, owned: Assignment | None) -> None:
    """throwIfConsumerGroupMemberEpochIsInvalid: a lost answer (the previous epoch with a subset of the assigned
    partitions) is forgiven."""
    if received > member.member_epoch:
        raise _error(ErrorCode.fenced_member_epoch,
                     f"The consumer group member has a greater member epoch ({received}) than the one known by the "
                     f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                     "rejoin.")
    if received < member.member_epoch and (received != member.previous_member_epoch
                                           or not _is_subset(owned, member.assigned_partitions)):
        raise _error(ErrorCode.fenced_member_epoch,
                     f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
                     f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                     "rejoin.")


class Migration(Protocol):
    """The online migration between classic and consumer groups (runtime/online_migration.py)."""

    def upgrade(self, group_id: str, records: list[Record]) -> ConsumerGroup: ...

    def downgrade(self, group: ConsumerGroup, leaving: set[str], records: list[Record]) -> bool: ...


class ConsumerGroupOps:
    """The consumer-group operations of one shard (heartbeat, leave, fence, timers). `groups` is the shard's
    dict of consumer groups (changed only by replay); `classic_is_busy(group_id)` tells whether a classic group
    of that id holds members (then the id is not ours); `classic_tombstones(group_id)` gives the records that
    delete an empty classic group of that id (Kafka converts it: maybeDeleteEmptyClassicGroup)."""

    def __init__(self, groups: dict[str, ConsumerGroup], settings: ConsumerGroupSettings, topics: TopicView,
                 timers: Any, clock: Any, classic_is_busy: Callable[[str], bool],
                 classic_tombstones: Callable[[str], list[Record]]) -> None:
        self.groups = groups
        self.settings = settings
        self.topics = topics
        self.timers = timers
        self.clock = clock
        self.classic_is_busy = classic_is_busy
        self.classic_tombstones = classic_tombstones
        #: session_key(group, member) -> the member's session deadline (monotonic ms); the key is its timer's too
        self.deadlines: dict[tuple[str, str, str], float] = {}
        self.migration: Migration | None = None  # online upgrade / downgrade (the shard sets it)
        self.resolved_at: dict[str, int] = {}  # group -> the catalog version its subscription metadata is from
        self.regexes = GroupRegexes(settings.topics_authorized)  # what the members' regexes resolve to
        #: a group's (session timeout, heartbeat interval): its consumer.* group configs (share/runtime/wiring.py)
        self.timing_for: Callable[[str], Any] | None = None

    # --- heartbeat ---------------------------------------------------------------------------------------

    def heartbeat(self, p: HeartbeatParams) -> tuple[HeartbeatAnswer, list[Record]]:
        validate_request(p, self.settings)
        if p.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return leave(self, p)
        records: list[Record] = []
        joining = p.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group = self._group_for(p.group_id, joining, records)
        member_id = p.member_id or str(uuid.uuid4())
        if len(group.members) >= self.settings.max_size and (not p.member_id or p.member_id not in group.members):
            raise _error(ErrorCode.group_max_size_reached,
                         f"The consumer group has reached its maximum capacity of {self.settings.max_size} members.")
        if p.instance_id is None:
            member = self._dynamic_member(group, member_id, p, joining)
        else:
            member = self._static_member(group, member_id, p, joining, records)
        updated = self.advance(group, member, self._updated_member(member, p), p.owned, records, p.describable)
        self.touch_session(group.group_id, updated.member_id)
        full = joining or (p.rebalance_timeout_ms != -1 and p.subscribed_topic_names is not None
                           and p.owned is not None)
        changed = updated.assigned_partitions != member.assigned_partitions
        return HeartbeatAnswer(updated.member_id, updated.member_epoch, self.heartbeat_interval_ms(p.group_id),
                               updated.assigned_partitions if full or changed else None), records

    def advance(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                owned: Assignment | None, records: list[Record],
                describable: Describable | None = None) -> ConsumerGroupMember:
        """The three steps of consumerGroupHeartbeat (and of a classic member's JoinGroup): `member` becomes
        `updated` (its subscription record; the subscription metadata and the group epoch when they move), a new
        target assignment when the group epoch is past it, and the member reconciled towards its target.
        `describable`: the heartbeating member's DESCRIBE permission on a topic, with an authorizer (regexes.py)."""
        regexes = functools.cache(lambda: self.regexes.resolve(group, [*group.members.values(), updated],
                                                               self.topics, describable))  # once, if needed
        bump = False
        if updated != member:
            records.append(rec.new_consumer_group_member_subscription_record(group.group_id, updated))
            bump = (updated.subscribed_topic_names != member.subscribed_topic_names
                    or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        subscription_changed = bump
        group_epoch = group.group_epoch
        metadata = group.subscription_metadata
        if bump or self.resolved_at.get(group.group_id) != self.topics.version:
            metadata = subscription_metadata(members_with(group.members, member, updated), self.topics, regexes())
            if metadata != group.subscription_metadata:
                records.append(rec.new_consumer_group_subscription_metadata_record(group.group_id, metadata))
                bump = True
            if bump:
                group_epoch += 1
                records.append(rec.new_consumer_group_epoch_record(group.group_id, group_epoch))
                log.info("consumer group epoch bumped", group=group.group_id, epoch=group_epoch)
            self.resolved_at[group.group_id] = self.topics.version
        if group_epoch > group.assignment_epoch:
            target = self._new_target(group, group_epoch, updated, metadata, records, regexes())
            target_epoch = group_epoch
        else:
            target_epoch = group.assignment_epoch
            target = group.target_of(updated.member_id, updated.instance_id)
        return self._reconcile(group, updated, target_epoch, target, owned, subscription_changed, metadata, records,
                               regexes)

    def downgrade(self, group: ConsumerGroup, leaving: set[str], records: list[Record]) -> bool:
        """validateOnlineDowngradeWithFencedMembers + convertToClassicGroup: True when the members in `leaving`
        are fenced by converting the group to a classic group (its records in `records`)."""
        return self.migration is not None and self.migration.downgrade(group, leaving, records)

    def steady(self, group_id: str, member_id: str, epoch: int, instance_id: str | None) -> bool:
        """The hot path: a heartbeat that carries nothing new (no subscription, owned partitions or settings) from a
        member that is reconciled to the group's target, in a group whose topics did not change. Such a heartbeat
        changes nothing and writes nothing: `heartbeat` would answer it with the member's id and epoch and no
        assignment; here only the session moves. False: take the full path. (A member's client id and host are
        not compared: they come with its connection and do not change for a member; the full path records them.)"""
        group = self.groups.get(group_id)
        if group is None:
            return False
        member = group.members.get(member_id)
        if member is None or member.member_epoch != epoch or epoch != group.assignment_epoch \
                or epoch != group.group_epoch or member.state is not _STABLE or member.instance_id != instance_id \
                or self.resolved_at.get(group_id) != self.topics.version:
            return False
        self.touch_session(group_id, member_id)
        return True

    def _group_for(self, group_id: str, create: bool, records: list[Record]) -> ConsumerGroup:
        """getOrMaybeCreateConsumerGroup (the group itself is made by the replay of its first record)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self.classic_is_busy(group_id):
            if create and self.migration is not None:
                return self.migration.upgrade(group_id, records)  # GROUP_ID_NOT_FOUND when it may not
            raise _error(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
        if not create:
            raise _error(ErrorCode.group_id_not_found, f"Consumer group {group_id} not found.")
        records.extend(self.classic_tombstones(group_id))  # an empty classic group of that id is replaced
        return ConsumerGroup(group_id)

    @staticmethod
    def _dynamic_member(group: ConsumerGroup, member_id: str, p: HeartbeatParams,
                        joining: bool) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise _error(ErrorCode.unknown_member_id,
                             f"Member {member_id} is not a member of group {group.group_id}.")
            log.info("member joins the consumer group", group=group.group_id, member=member_id)
            return ConsumerGroupMember(member_id)
        check_member_epoch(member, p.member_epoch, p.owned)
        return member

    def _static_member(self, group: ConsumerGroup, member_id: str, p: HeartbeatParams, joining: bool,
                       records: list[Record]) -> ConsumerGroupMember:
        existing = group.static_member(p.instance_id)
        if joining:
            if existing is None:
                log.info("static member joins the consumer group", group=group.group_id, member=member_id,
                         instance=p.instance_id)
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and existing.classic is None:
                raise _error(ErrorCode.unreleased_instance_id,
                             f"Static member {member_id} with instance id {p.instance_id} cannot join the group "
                             f"because the instance id is owned by {existing.member_id} member.")
            new = dataclasses.replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            self._replace_member(group, existing, new, records)
            log.info("static member re-joins the consumer group", group=group.group_id, member=member_id,
                     replaced=existing.member_id, instance=p.instance_id)
            return new
        if existing is None:
            raise _error(ErrorCode.unknown_member_id, f"Instance id {p.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise _error(ErrorCode.fenced_instance_id,
                         f"Static member {member_id} with instance id {p.instance_id} was fenced by member "
                         f"{existing.member_id}.")
        check_member_epoch(existing, p.member_epoch, p.owned)
        return existing

    def _replace_member(self, group: ConsumerGroup, old: ConsumerGroupMember, new: ConsumerGroupMember,
                        records: list[Record]) -> None:
        """replaceMember: the old member's records go, the new one inherits its target assignment."""
        gid = group.group_id
        records += member_tombstones(gid, old.member_id)
        records.append(rec.new_consumer_group_member_subscription_record(gid, new))
        inherited = group.target_of(old.member_id)
        records.append(rec.new_consumer_group_target_assignment_record(gid, new.member_id, inherited))
        records.append(rec.new_consumer_group_current_assignment_record(gid, new))
        self.deadlines.pop(session_key(gid, old.member_id), None)
        self.timers.cancel(("c-rebalance", gid, old.member_id))

    @staticmethod
    def _updated_member(member: ConsumerGroupMember, p: HeartbeatParams) -> ConsumerGroupMember:
        """ConsumerGroupMember.Builder's maybeUpdate* with the request's fields (the member itself when none
        changes: the common heartbeat)."""
        changes: dict[str, Any] = {}
        if member.classic is not None:  # a classic member's instance id now speaks the consumer protocol
            changes["classic"] = None
        if p.client_id != member.client_id:
            changes["client_id"] = p.client_id
        if p.client_host != member.client_host:
            changes["client_host"] = p.client_host
        if p.instance_id is not None and p.instance_id != member.instance_id:
            changes["instance_id"] = p.instance_id
        if p.rack_id is not None and p.rack_id != member.rack_id:
            changes["rack_id"] = p.rack_id
        if p.rebalance_timeout_ms != -1 and p.rebalance_timeout_ms != member.rebalance_timeout_ms:
            changes["rebalance_timeout_ms"] = p.rebalance_timeout_ms
        if p.server_assignor is not None and p.server_assignor != member.server_assignor_name:
            changes["server_assignor_name"] = p.server_assignor
        if p.subscribed_topic_names is not None:
            names = frozenset(p.subscribed_topic_names)
            if names != member.subscribed_topic_names:
                changes["subscribed_topic_names"] = names
        if p.subscribed_topic_regex is not None and (p.subscribed_topic_regex or None) != member.subscribed_topic_regex:
            changes["subscribed_topic_regex"] = p.subscribed_topic_regex or None
        return dataclasses.replace(member, **changes) if changes else member

    def _new_target(self, group: ConsumerGroup, group_epoch: int, updated: ConsumerGroupMember,
                    metadata: dict[str, TopicMetadata], records: list[Record], regexes: Resolved) -> Assignment:
        """updateTargetAssignment: the preferred assignor over the group with `updated` in it."""
        assignors = self.settings.assignors or {}
        name = group.preferred_assignor(group.members.get(updated.member_id), updated) \
            or self.settings.default_assignor
        try:
            result = build_target_assignment(
                group.group_id, group_epoch, assignors[name], group.members, group.target_assignment, metadata,
                group.static_members, {updated.member_id: updated}, resolved_regexes=regexes)
        except Exception as exc:  # PartitionAssignorException -> UNKNOWN_SERVER_ERROR, as Kafka
            log.error("target assignment failed", group=group.group_id, epoch=group_epoch, error=str(exc))
            raise _error(ErrorCode.unknown_server_error,
                         f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}") from exc
        for member_id, assignment in result.changed:
            records.append(rec.new_consumer_group_target_assignment_record(group.group_id, member_id, assignment))
        records.append(rec.new_consumer_group_target_assignment_epoch_record(group.group_id, group_epoch))
        log.info("computed a new target assignment", group=group.group_id, epoch=group_epoch, assignor=name,
                 members=len(result.assignments))
        return result.assignments.get(updated.member_id, {})

    def _reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                   owned: Assignment | None, subscription_changed: bool, metadata: dict[str, TopicMetadata],
                   records: list[Record], regexes: Callable[[], Resolved]) -> ConsumerGroupMember:
        """maybeReconcile: the next step of the member towards its target, and its rebalance timer."""
        if reconciled_to(member, target_epoch) and not subscription_changed:
            return member
        topic_ids = {name: meta.topic_id for name, meta in metadata.items()}
        subscribed = subscribed_topic_ids(member, topic_ids, regexes())
        updated = next_member_state(member, target_epoch, target, group.partition_epoch, owned,
                                    subscribed_topic_ids=subscribed, has_subscription_changed=subscription_changed)
        if updated != member:
            records.append(rec.new_consumer_group_current_assignment_record(group.group_id, updated))
            key = ("c-rebalance", group.group_id, updated.member_id)
            if updated.state is MemberState.UNREVOKED_PARTITIONS:
                self.timers.schedule(key, max(updated.rebalance_timeout_ms, 0), rebalance_timeout_fired, self,
                                     group.group_id, updated.member_id, updated.member_epoch)
            else:
                self.timers.cancel(key)
        return updated

    def after_load(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """onLoaded: the member's session starts now; a member revoking partitions gets its rebalance timeout."""
        self.touch_session(group.group_id, member.member_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            self.timers.schedule(("c-rebalance", group.group_id, member.member_id),
                                 max(member.rebalance_timeout_ms, 0), rebalance_timeout_fired, self,
                                 group.group_id, member.member_id, member.member_epoch)

    # --- sessions ------------------------------------------------------------------------------------------

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's heartbeat interval: its consumer.heartbeat.interval.ms, else group.consumer.*'s."""
        return self.settings.heartbeat_interval_ms if self.timing_for is None \
            else self.timing_for(group_id).heartbeat_interval_ms

    def touch_session(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        """Move the member's session deadline; arm its one timer if it is not armed (O(1) per heartbeat). A classic
        member's session is its JoinGroup's session timeout."""
        if timeout_ms is None:
            timeout_ms = self.settings.session_timeout_ms if self.timing_for is None \
                else self.timing_for(group_id).session_timeout_ms
        deadline = self.clock.now_ms() + timeout_ms
        key = ("c-session", group_id, member_id)  # session_key(group_id, member_id), inlined: the hot path
        self.deadlines[key] = deadline
        if key not in self.timers:
            self.timers.schedule_at(key, deadline, session_timer_fired, self, group_id, member_id)

