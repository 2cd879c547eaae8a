"""Classic-protocol members in a consumer group: Kafka's classicGroupJoinToConsumerGroup,
classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup.

A consumer that speaks the classic protocol (JoinGroup / SyncGroup / Heartbeat) may be a member of a KIP-848
consumer group whatever the migration policy: its JoinGroup is the consumer heartbeat's three steps (its
subscription read from its consumer-protocol metadata, the group epoch, the target assignment, its reconciliation),
its generation is its member epoch, and its SyncGroup is answered with its current assignment as a
ConsumerProtocolAssignment. It is asked to rejoin (REBALANCE_IN_PROGRESS) when the group epoch moved past it or its
assignment must change. Its ClassicMemberMetadata (session timeout, JoinGroup protocols) is kept on the member and
written in its subscription record.

Nothing here answers or writes: each operation returns the records and what to do once they are written (the
answer, the timers Kafka arms on success); `KafkaError` is the answer when the request is refused.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError, write_error_code
from coordinator.groups.classic_group import UNKNOWN_MEMBER_ID
from coordinator.groups.classic_member import JoinResult, SyncResult
from coordinator.groups.consumer import records as rec
from coordinator.groups.consumer.group import PROTOCOL_TYPE, ConsumerGroup
from coordinator.groups.consumer.group_heartbeat import ConsumerGroupOps, _error
from coordinator.groups.consumer.leaving import fence, fence_members_records, member_tombstones
from coordinator.groups.consumer.model import Assignment, ConsumerGroupMember, MemberState
from coordinator.groups.membership import JOIN_REQUIRES_KNOWN_MEMBER_ID_FROM
from coordinator.groups.params import JoinParams, LeaveResult, LeavingMember, SyncParams
from coordinator.groups.result import GroupResult
from coordinator.records.types import Record
from rules.consumer_protocol import SubscriptionError, decode_subscription, encode_assignment, protocol_version
from storage.consumer_group_records import ClassicMemberMetadata, ClassicProtocol

log = structlog.get_logger("coordinator.groups")



class ClassicMembers:
    """The classic-protocol operations on the consumer groups of `ops` (its groups, topics, timers)."""

    def __init__(self, ops: ConsumerGroupOps) -> None:
        self.ops = ops

    # --- JoinGroup ----------------------------------------------------------------------------------------

    def join(self, group: ConsumerGroup, p: JoinParams,
             reply: Callable[[JoinResult], None]) -> GroupResult | None:
        """classicGroupJoinToConsumerGroup. None: answered at once (MEMBER_ID_REQUIRED); else the records and,
        once written, the answer."""
        ops = self.ops
        unknown = p.member_id == UNKNOWN_MEMBER_ID
        member_id = str(uuid.uuid4()) if unknown else p.member_id
        if member_id not in group.members and len(group.members) >= ops.settings.max_size:
            raise _error(ErrorCode.group_max_size_reached,
                         f"The consumer group has reached its maximum capacity of {ops.settings.max_size} members.")
        if not group.supports_classic_protocols(p.protocol_type, {name for name, _ in p.protocols}):
            raise _error(ErrorCode.inconsistent_group_protocol, f"Member {member_id}'s protocols are not supported.")
        if unknown and p.group_instance_id is None and p.api_version >= JOIN_REQUIRES_KNOWN_MEMBER_ID_FROM:
            log.info("classic member with unknown member id joins the consumer group; asked to rejoin with one",
                     group=group.group_id, member=member_id)
            reply(JoinResult(ErrorCode.member_id_required, member_id))
            return None
        records: list[Record] = []
        if p.group_instance_id is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id)
        else:
            member = self._static_member(group, member_id, p, unknown, records)
        try:
            subscription = decode_subscription(p.protocols[0][1])
        except SubscriptionError as exc:  # Kafka: IllegalStateException
            raise _error(ErrorCode.unknown_server_error,
                         f"Malformed embedded consumer protocol in subscription deserialization: {exc}") from exc
        changes: dict = {"subscribed_topic_names": frozenset(subscription.topics), "client_id": p.client_id,
                         "client_host": p.client_host, "classic": ClassicMemberMetadata(
                             p.session_timeout_ms, tuple(ClassicProtocol(n, m) for n, m in p.protocols))}
        if p.group_instance_id is not None:
            changes["instance_id"] = p.group_instance_id
        if subscription.rack_id is not None:
            changes["rack_id"] = subscription.rack_id
        if p.rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = p.rebalance_timeout_ms
        updated = dataclasses.replace(member, **changes)
        owned = self._owned(subscription.owned_partitions)
        updated = ops.advance(group, member, updated, owned, records)
        answer = JoinResult(ErrorCode.none, updated.member_id, updated.member_epoch, PROTOCOL_TYPE,
                            p.protocols[0][0])
        group_id, session_ms, rebalance_ms = group.group_id, p.session_timeout_ms, p.rebalance_timeout_ms

        def written(error: BaseException | None) -> None:
            if error is not None:
                reply(JoinResult(write_error_code(error), p.member_id))
                return
            ops.timers.cancel(("c-join", group_id, answer.member_id))
            self.touch_session(group_id, answer.member_id, session_ms)
            ops.timers.schedule(("c-sync", group_id, answer.member_id), max(rebalance_ms, 0), fence, ops, group_id,
                                answer.member_id, "the member failed to sync within timeout")
            reply(answer)

        return GroupResult(records, written)

    def _static_member(self, group: ConsumerGroup, member_id: str, p: JoinParams, unknown: bool,
                       records: list[Record]) -> ConsumerGroupMember:
        """getOrMaybeSubscribeStaticConsumerGroupMember with the classic protocol: a static member joining with an
        unknown member id replaces the instance's member, whatever protocol that one speaks."""
        instance_id = p.group_instance_id
        existing = group.static_member(instance_id)
        if unknown:
            if existing is None:
                log.info("static member joins the consumer group using the classic protocol", group=group.group_id,
                         member=member_id, instance=instance_id)
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            new = dataclasses.replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            gid = group.group_id
            records += member_tombstones(gid, existing.member_id)
            records.append(rec.new_consumer_group_member_subscription_record(gid, new))
            records.append(rec.new_consumer_group_target_assignment_record(gid, member_id,
                                                                           group.target_of(existing.member_id)))
            records.append(rec.new_consumer_group_current_assignment_record(gid, new))
            log.info("static member re-joins the consumer group using the classic protocol", group=gid,
                     member=member_id, replaced=existing.member_id, instance=instance_id)
            return new
        if existing is None:
            raise _error(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise _error(ErrorCode.fenced_instance_id, f"Static member {member_id} with instance id {instance_id} "
                                                       f"was fenced by member {existing.member_id}.")
        return existing

    def _owned(self, owned: tuple[tuple[str, tuple[int, ...]], ...]) -> Assignment:
        """toTopicPartitions: the owned partitions of the subscription by topic id (unknown topics dropped)."""
        out: dict = {}
        for name, partitions in owned:
            topic = self.ops.topics.topic(name)
            if topic is not None and partitions:
                out[topic.topic_id] = out.get(topic.topic_id, frozenset()) | frozenset(partitions)
        return out

    # --- SyncGroup ----------------------------------------------------------------------------------------

    def sync(self, group: ConsumerGroup, p: SyncParams) -> SyncResult:
        """classicGroupSyncToConsumerGroup: the member's assignment, if it need not rejoin first."""
        member = self._validated(group, p.member_id, p.group_instance_id, p.generation_id)
        assert member.classic is not None
        protocol_name = member.classic.supported_protocols[0].name if member.classic.supported_protocols else None
        if p.protocol_type is not None and p.protocol_type != PROTOCOL_TYPE:
            raise _error(ErrorCode.inconsistent_group_protocol,
                         f"The protocol type {p.protocol_type} from member {member.member_id} request is not equal "
                         f"to the group protocol type {PROTOCOL_TYPE}.")
        if p.protocol_name is not None and p.protocol_name != protocol_name:
            raise _error(ErrorCode.inconsistent_group_protocol,
                         f"The protocol name {p.protocol_name} from member {member.member_id} request is not equal "
                         f"to the protocol name {protocol_name} returned in the join response.")
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._schedule_join_timeout(group.group_id, member)
            raise _error(ErrorCode.rebalance_in_progress,
                         f"A new rebalance is triggered in group {group.group_id} and member {member.member_id} "
                         "should rejoin to catch up.")
        self.ops.timers.cancel(("c-sync", group.group_id, member.member_id))
        self.touch_session(group.group_id, member.member_id, member.classic.session_timeout_ms)
        return SyncResult(ErrorCode.none, p.protocol_type, p.protocol_name, self.assignment_bytes(member))

    def assignment_bytes(self, member: ConsumerGroupMember) -> bytes:
        """prepareAssignment: the member's assigned partitions as a ConsumerProtocolAssignment of the version its
        first JoinGroup protocol speaks."""
        assert member.classic is not None
        try:
            version = protocol_version(member.classic.supported_protocols[0].metadata)
        except (SubscriptionError, IndexError) as exc:
            raise _error(ErrorCode.unknown_server_error,
                         "Malformed embedded consumer protocol in version deserialization.") from exc
        topics: list[tuple[str, list[int]]] = []
        for topic_id, partitions in member.assigned_partitions.items():
            name = self.ops.topics.name_of(topic_id)
            if name is not None:
                topics.append((name, sorted(partitions)))
        return encode_assignment(sorted(topics), version)

    # --- Heartbeat ----------------------------------------------------------------------------------------

    def heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        """classicGroupHeartbeatToConsumerGroup: the session moves; REBALANCE_IN_PROGRESS when the member must
        rejoin (the group epoch moved past it, it must revoke partitions, or the ones it waits for are free)."""
        try:
            member = self._validated(group, member_id, instance_id, generation_id)
        except KafkaError as exc:
            return exc.code
        assert member.classic is not None
        self.touch_session(group.group_id, member.member_id, member.classic.session_timeout_ms)
        state = member.state
        if member.member_epoch < group.group_epoch or state is MemberState.UNREVOKED_PARTITIONS or (
                state is MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased_partition(member)):
            self._schedule_join_timeout(group.group_id, member)
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    # --- LeaveGroup ---------------------------------------------------------------------------------------

    def leave(self, group: ConsumerGroup, leaving: list[LeavingMember]) -> tuple[LeaveResult, list[Record]]:
        """classicGroupLeaveToConsumerGroup: the members found are fenced together (consumerGroupFenceMembers,
        which may downgrade the group); each gets its own answer."""
        answers: list[tuple[str, str | None, ErrorCode]] = []
        members: dict[str, ConsumerGroupMember] = {}
        for m in leaving:
            member = self._leaving_member(group, m)
            if isinstance(member, ErrorCode):
                answers.append((m.member_id, m.group_instance_id, member))
                continue
            log.info("member left the consumer group through LeaveGroup", group=group.group_id,
                     member=member.member_id, instance=m.group_instance_id, reason=m.reason or "not provided")
            answers.append((m.member_id, m.group_instance_id, ErrorCode.none))
            members[member.member_id] = member
        records = fence_members_records(self.ops, group, list(members.values()))
        return LeaveResult(ErrorCode.none, tuple(answers)), records

    @staticmethod
    def _leaving_member(group: ConsumerGroup, m: LeavingMember) -> ConsumerGroupMember | ErrorCode:
        if m.group_instance_id is None:
            member = group.members.get(m.member_id)
            return ErrorCode.unknown_member_id if member is None else member
        member = group.static_member(m.group_instance_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if m.member_id != UNKNOWN_MEMBER_ID and member.member_id != m.member_id:
            return ErrorCode.fenced_instance_id
        return member

    # --- shared -------------------------------------------------------------------------------------------

    @staticmethod
    def _validated(group: ConsumerGroup, member_id: str, instance_id: str | None,
                   generation_id: int) -> ConsumerGroupMember:
        """validateConsumerGroupMember, throwIfMemberDoesNotUseClassicProtocol, throwIfGenerationIdUnmatched."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise _error(ErrorCode.unknown_member_id,
                             f"Member {member_id} is not a member of group {group.group_id}.")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise _error(ErrorCode.unknown_member_id, f"Member with instance id {instance_id} is not a member "
                                                          f"of group {group.group_id}.")
            if member.member_id != member_id:
                raise _error(ErrorCode.fenced_instance_id, f"Static member {member_id} with instance id "
                                                           f"{instance_id} was fenced by member {member.member_id}.")
        if member.classic is None:
            raise _error(ErrorCode.unknown_member_id, f"Member {member.member_id} does not use the classic protocol.")
        if member.member_epoch != generation_id:
            raise _error(ErrorCode.illegal_generation,
                         f"The request generation id {generation_id} is not equal to the member epoch "
                         f"{member.member_epoch} of member {member.member_id}.")
        return member

    def touch_session(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        """scheduleConsumerGroupSessionTimeout with the member's own session timeout (rescheduled)."""
        self.ops.timers.cancel(("c-session", group_id, member_id))
        self.ops.touch_session(group_id, member_id, timeout_ms)

    def _schedule_join_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        """scheduleConsumerGroupJoinTimeoutIfAbsent: a member told to rejoin is fenced if it does not within its
        rebalance timeout."""
        key = ("c-join", group_id, member.member_id)
        if key not in self.ops.timers:
            self.ops.timers.schedule(key, max(member.rebalance_timeout_ms, 0), fence, self.ops, group_id,
                                     member.member_id, "the classic member failed to join within the rebalance "
                                                       "timeout")
