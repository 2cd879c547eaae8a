"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup of classic groups, as Kafka answers them.

Ported in behaviour (not code) from GroupMetadataManager.classicGroupJoin*,
classicGroupSync*, classicGroupHeartbeat*, classicGroupLeave* and the request checks of
GroupCoordinatorService / KafkaApis. Answers go to the `reply` callable the handler
passed in, possibly much later (JoinGroup and SyncGroup are delayed operations);
Heartbeat answers at once; LeaveGroup returns its answer. Nothing here writes: join, sync
and leave return the `GroupResult` to write (groups/result.py), and the shard writes it
(runtime.shard.Shard.join/sync/leave); LeaveGroup's answer waits for that write.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError, write_error_code
from coordinator.groups.classic_group import (
    MAX_SHORT_STRING_BYTES,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    GroupState,
    IllegalStateTransition,
)
from coordinator.groups.classic_member import EMPTY_ASSIGNMENT, JoinResult, JoinWaiter, Member, SyncResult, SyncWaiter
from coordinator.groups.params import JoinParams, LeaveResult, LeavingMember, SyncParams
from coordinator.groups.rebalance import Rebalancer
from coordinator.groups.result import GroupResult, combined, store_group
from coordinator.records.types import GroupMetadataRecord, GroupMetadataValue

log = structlog.get_logger("coordinator.groups")

S = GroupState
# Heartbeat's states and answer as module constants: an Enum attribute costs ~150 ns per access
_DEAD, _EMPTY, _PREPARING_REBALANCE, _NONE = S.DEAD, S.EMPTY, S.PREPARING_REBALANCE, ErrorCode.none
JOIN_REQUIRES_KNOWN_MEMBER_ID_FROM = 4  # JoinGroupRequest.requiresKnownMemberId
JOIN_SUPPORTS_SKIP_ASSIGNMENT_FROM = 9  # JoinGroupRequest.supportsSkippingAssignment
SYNC_REQUIRES_PROTOCOL_FROM = 5  # SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent


def _inconsistent(requested: str | None, actual: str | None) -> bool:
    """isProtocolInconsistent: a null in the request matches anything (pre-v5 clients)."""
    return requested is not None and requested != actual


def _too_long(text: str | None) -> bool:
    return text is not None and len(text) > MAX_SHORT_STRING_BYTES // 4 and \
        len(text.encode()) > MAX_SHORT_STRING_BYTES


def _unpersistable(p: JoinParams) -> bool:
    """A string GroupMetadataValue v3 must hold but cannot (int16 length), possible only through
    JoinGroup v6+'s compact strings. Kafka accepts it and then fails every write of the group
    (UNKNOWN_SERVER_ERROR for ever); refused at once instead, as Kafka refuses bad request fields."""
    return _too_long(p.group_instance_id) or _too_long(p.protocol_type) or \
        any(_too_long(name) for name, _ in p.protocols)


class Membership(Rebalancer):
    #: where a heartbeat for a group id that no classic group has goes (the shard: consumer groups), or None
    other_heartbeat: Callable[[str, str, str | None, int], ErrorCode] | None = None

    # --- JoinGroup ----------------------------------------------------------------------

    def join(self, p: JoinParams, reply: JoinWaiter) -> GroupResult | None:
        error = self.join_request_error(p)
        if error is not None:
            reply(JoinResult(error, p.member_id))
            return None
        unknown = p.member_id == UNKNOWN_MEMBER_ID
        group = self.groups.get(p.group_id)
        new_group = group is None
        if group is None:
            if not unknown:  # getOrMaybeCreateClassicGroup(groupId, false)
                reply(JoinResult(ErrorCode.unknown_member_id, p.member_id))
                return None
            group = self.groups[p.group_id] = ClassicGroup(p.group_id, self.clock.wall_ms())
        result = None
        if not self._accept_joining_member(group, p.member_id):
            group.remove(p.member_id)
            reply(JoinResult(ErrorCode.group_max_size_reached, UNKNOWN_MEMBER_ID))
        elif unknown:
            result = self._join_new_member(group, p, reply)
        else:
            result = self._join_existing_member(group, p, reply)
        if new_group:
            # Kafka commits a new group with an empty GroupMetadata record.
            # (GroupCoordinatorRecordHelpers.newEmptyGroupMetadataRecord)
            empty = GroupMetadataValue("", 0, None, None, (), group.state_timestamp)
            result = combined(result, GroupResult([GroupMetadataRecord(p.group_id, empty)],
                                                  self._warn_on_failure(p.group_id, "new group")))
        return result

    def join_request_error(self, p: JoinParams) -> ErrorCode | None:
        if not p.group_id:
            return ErrorCode.invalid_group_id
        if p.group_instance_id == "":
            # Kafka's clients refuse an empty group.instance.id (JoinGroupRequest.validateGroupInstanceId) and its
            # KIP-848 path answers INVALID_REQUEST ("InstanceId can't be empty."): no static member without a name.
            return ErrorCode.invalid_request
        if _unpersistable(p):
            return ErrorCode.invalid_request
        settings = self.settings
        if not settings.min_session_timeout_ms <= p.session_timeout_ms <= settings.max_session_timeout_ms:
            return ErrorCode.invalid_session_timeout
        return None

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        """acceptJoiningMember: group.max.size, counted as Kafka counts it per state."""
        max_size = self.settings.max_size
        if group.state in (S.EMPTY, S.DEAD):
            return True
        if group.is_in(S.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join is not None) or group.num_awaiting_join < max_size
        return member_id in group.members or len(group.members) < max_size

    def _join_new_member(self, group: ClassicGroup, p: JoinParams, reply: JoinWaiter) -> GroupResult | None:
        error = self._join_group_error(group, p)
        if error is not None:
            reply(JoinResult(error, UNKNOWN_MEMBER_ID))
            return None
        new_member_id = group.generate_member_id(p.client_id, p.group_instance_id)
        if p.group_instance_id is not None:
            existing = group.static_member_id(p.group_instance_id)
            if existing is not None:
                log.info("static member rejoins with unknown member id; replacing", group=group.group_id,
                         instance=p.group_instance_id, old_member=existing, member=new_member_id)
                return self._update_static_member_then_rebalance(group, p, existing, new_member_id, reply)
            return self._add_member_then_rebalance(group, p, new_member_id, reply)
        if p.api_version >= JOIN_REQUIRES_KNOWN_MEMBER_ID_FROM:
            group.add_pending_member(new_member_id)
            self.schedule_pending_member_expiry(group, new_member_id, p.session_timeout_ms)
            reply(JoinResult(ErrorCode.member_id_required, new_member_id))
            return None
        return self._add_member_then_rebalance(group, p, new_member_id, reply)

    @staticmethod
    def _join_group_error(group: ClassicGroup, p: JoinParams) -> ErrorCode | None:
        if group.is_in(S.DEAD):
            return ErrorCode.coordinator_not_available
        if not group.supports_protocols(p.protocol_type, {name for name, _ in p.protocols}):
            return ErrorCode.inconsistent_group_protocol
        return None

    def _join_existing_member(self, group: ClassicGroup, p: JoinParams, reply: JoinWaiter) -> GroupResult | None:
        member_id = p.member_id
        error = self._join_group_error(group, p)
        if error is None and group.is_pending_member(member_id):
            if p.group_instance_id is None:
                return self._add_member_then_rebalance(group, p, member_id, reply)
            # Kafka throws IllegalStateException here, answered as UNKNOWN_SERVER_ERROR
            error = ErrorCode.unknown_server_error
        if error is None:
            try:
                group.validate_member(member_id, p.group_instance_id)
            except KafkaError as exc:
                error = exc.code
        if error is not None:
            reply(JoinResult(error, member_id))
            return None
        member = group.members[member_id]
        reason = p.reason or "not provided"
        if group.is_in(S.PREPARING_REBALANCE):
            return self._update_member_then_rebalance(group, p, member, reply, "member_rejoined",
                                                      f"member {member_id} rejoined; reason: {reason}")
        if group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(p.protocols):
                # it missed the JoinGroup answer: give it the current generation again
                reply(group.join_result(member_id, members=group.is_leader(member_id)))
                return None
            return self._update_member_then_rebalance(group, p, member, reply, "subscription_change",
                                                      f"member {member_id} changed its metadata; reason: {reason}")
        if group.is_in(S.STABLE):
            if group.is_leader(member_id):
                # the leader may rejoin to trigger a rebalance for metadata changes
                return self._update_member_then_rebalance(group, p, member, reply, "leader_rejoined",
                                                          f"leader {member_id} rejoined; reason: {reason}")
            if not member.matches(p.protocols):
                return self._update_member_then_rebalance(group, p, member, reply, "subscription_change",
                                                          f"member {member_id} changed its metadata; reason: {reason}")
            reply(group.join_result(member_id, members=False))
            return None
        log.warning("rejoining member found the group empty", group=group.group_id, member=member_id)
        reply(JoinResult(ErrorCode.unknown_member_id, member_id))
        return None

    def _update_member_then_rebalance(self, group: ClassicGroup, p: JoinParams, member: Member,
                                      reply: JoinWaiter, cause: str, detail: str) -> GroupResult | None:
        group.update_member(member, p.protocols, p.rebalance_timeout_ms, p.session_timeout_ms, reply)
        return self.maybe_prepare_rebalance_or_complete_join(group, cause, detail)

    def _add_member_then_rebalance(self, group: ClassicGroup, p: JoinParams, member_id: str,
                                   reply: JoinWaiter) -> GroupResult | None:
        member = Member(member_id, p.group_instance_id, p.client_id, p.client_host, p.rebalance_timeout_ms,
                        p.session_timeout_ms, p.protocol_type, p.protocols, is_new=True)
        if group.is_in(S.PREPARING_REBALANCE) and group.previous_state is S.EMPTY:
            group.new_member_added = True  # extends the initial delay
        group.add(member, reply)
        # A new member cannot heartbeat before it has its id; it gets the (long) new-member
        # join timeout instead, so a client that vanished mid-join is removed eventually.
        self.touch_session(group, member, self.settings.new_member_join_timeout_ms)
        return self.maybe_prepare_rebalance_or_complete_join(
            group, "member_joined",
            f"new member {member_id} (instance {p.group_instance_id}); reason: {p.reason or 'not provided'}")

    def _update_static_member_then_rebalance(self, group: ClassicGroup, p: JoinParams, old_member_id: str,
                                             new_member_id: str, reply: JoinWaiter) -> GroupResult | None:
        instance_id = p.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        new = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self.cancel_session(group.group_id, old_member_id)
        self.touch_session(group, new)
        old_rebalance, old_session, old_protocols = new.rebalance_timeout_ms, new.session_timeout_ms, new.protocols
        group.update_member(new, p.protocols, p.rebalance_timeout_ms, p.session_timeout_ms, reply)
        if group.is_in(S.STABLE):
            if (group.protocol_name or "") != group.select_protocol():
                return self.maybe_prepare_rebalance_or_complete_join(
                    group, "static_member_protocol_change",
                    f"static member {instance_id} rejoined as {new_member_id} with other protocols")
            # Same protocol: persist the new member id and keep the assignment, no rebalance.
            version = p.api_version

            def stored(error: BaseException | None) -> None:
                if error is not None:
                    log.warning("failed to store replaced static member; reverting", group=group.group_id,
                                instance=instance_id, member=new_member_id)
                    if group.members.get(new_member_id) is new and group.static_member_id(instance_id) == new_member_id:
                        group.update_member(new, old_protocols, old_rebalance, old_session, None)
                        old = group.replace_static_member(instance_id, new_member_id, old_member_id)
                        self.cancel_session(group.group_id, new_member_id, new)
                        self.touch_session(group, old)
                    reply(JoinResult(write_error_code(error), UNKNOWN_MEMBER_ID, group.generation_id,
                                     group.protocol_type, group.protocol_name, current_leader or ""))
                elif not group.is_in(S.STABLE):
                    return  # a rebalance started meanwhile; the member's JoinGroup waits for it
                elif version >= JOIN_SUPPORTS_SKIP_ASSIGNMENT_FROM:
                    # v9+: the leader learns it leads but must not run the assignor
                    leader = group.is_leader(new_member_id)
                    group.complete_join(new, group.join_result(new_member_id, members=leader, skip_assignment=leader))
                else:
                    # before v9: the old leader id, so the new member does not assign
                    group.complete_join(new, group.join_result(new_member_id, members=False,
                                                               leader=current_leader or ""))

            result = store_group(group, group.group_assignment(), stored)
            log.info("static member replaced without rebalance", group=group.group_id, instance=instance_id,
                     old_member=old_member_id, member=new_member_id)
            return result
        if group.is_in(S.COMPLETING_REBALANCE):
            # the leader may already assign for the old member id: rebalance
            return self.prepare_rebalance(group, "static_member_replaced",
                                          f"static member {instance_id} rejoined as {new_member_id} during sync")
        if group.state in (S.EMPTY, S.DEAD):
            raise IllegalStateTransition(f"static member {instance_id} rejoined {group.group_id} "
                                         f"in state {group.state.value}")
        return self.maybe_complete_join_phase(group)

    # --- SyncGroup ------------------------------------------------------------------------

    def sync(self, p: SyncParams, reply: SyncWaiter) -> GroupResult | None:
        group = self.groups.get(p.group_id)
        error = self._sync_request_error(p, group)
        if error is not None:
            reply(SyncResult(error))
            return None
        assert group is not None
        member = group.members[p.member_id]
        if group.is_in(S.STABLE):
            self.remove_pending_sync_member(group, p.member_id)
            reply(SyncResult(ErrorCode.none, group.protocol_type, group.protocol_name, member.assignment))
            return None
        # CompletingRebalance: wait for the leader's assignment (and its write)
        replaced = member.awaiting_sync
        member.awaiting_sync = reply
        if replaced is not None and replaced is not reply:
            # a second SyncGroup of the same member replaces the first: answer the first
            # (REBALANCE_IN_PROGRESS: retriable, keeps the member id) so its connection,
            # whose responses leave in order, is not blocked; Kafka leaves it unanswered
            replaced(SyncResult(ErrorCode.rebalance_in_progress))
        self.remove_pending_sync_member(group, p.member_id)
        if group.is_leader(p.member_id):
            return self._store_assignment(group, p)
        return None

    @staticmethod
    def sync_request_error(p: SyncParams) -> ErrorCode | None:
        """The request's own checks (GroupCoordinatorService.syncGroup), whatever the group."""
        if p.api_version >= SYNC_REQUIRES_PROTOCOL_FROM and (p.protocol_type is None or p.protocol_name is None):
            return ErrorCode.inconsistent_group_protocol
        if not p.group_id:
            return ErrorCode.invalid_group_id
        return None

    def _sync_request_error(self, p: SyncParams, group: ClassicGroup | None) -> ErrorCode | None:
        error = self.sync_request_error(p)
        if error is not None:
            return error
        if group is None or group.is_in(S.EMPTY):
            return ErrorCode.unknown_member_id
        error = self._validate_sync(group, p)
        if error is None and group.is_in(S.PREPARING_REBALANCE):
            return ErrorCode.rebalance_in_progress
        return error

    def _validate_sync(self, group: ClassicGroup, p: SyncParams) -> ErrorCode | None:
        if group.is_in(S.DEAD):
            return ErrorCode.coordinator_not_available
        try:
            group.validate_member(p.member_id, p.group_instance_id)
        except KafkaError as exc:
            return exc.code
        if p.generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        if _inconsistent(p.protocol_type, group.protocol_type) or _inconsistent(p.protocol_name, group.protocol_name):
            return ErrorCode.inconsistent_group_protocol
        return None

    def _store_assignment(self, group: ClassicGroup, p: SyncParams) -> GroupResult:
        assignment = dict(p.assignments)
        missing = [m for m in group.members if m not in assignment]
        for member_id in missing:
            assignment[member_id] = EMPTY_ASSIGNMENT
        if missing:
            log.warning("leader sent no assignment for some members", group=group.group_id,
                        generation=group.generation_id, members=len(missing))
        generation = p.generation_id

        def stored(error: BaseException | None) -> GroupResult | None:
            # another member may have joined meanwhile: act only on the same generation
            if not group.is_in(S.COMPLETING_REBALANCE) or generation != group.generation_id:
                return None
            if error is not None:
                code = write_error_code(error)
                self.reset_and_propagate_assignment_with_error(group, code)
                return self.maybe_prepare_rebalance_or_complete_join(group, "store_failed",
                                                                     f"storing the assignment failed: {code.name}")
            self.set_and_propagate_assignment(group, assignment)
            group.transition_to(S.STABLE, self.clock.wall_ms())
            self._close_rebalance(group, "stable")
            return None

        return store_group(group, assignment, stored)

    # --- Heartbeat ------------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        """classicGroupHeartbeatToClassicGroup; on success only a deadline moves (O(1)). A group id that is not a
        classic group's goes to `other_heartbeat` when set (a consumer group's classic-protocol members)."""
        group = self.groups.get(group_id)
        if group is None:
            if self.other_heartbeat is not None and group_id:
                return self.other_heartbeat(group_id, member_id, instance_id, generation_id)
            return ErrorCode.invalid_group_id if not group_id else ErrorCode.unknown_member_id
        state = group.state
        if state is _DEAD:
            return ErrorCode.coordinator_not_available
        member = group.members.get(member_id)
        if instance_id is not None or member is None:
            try:
                group.validate_member(member_id, instance_id)
            except KafkaError as exc:
                return exc.code
            member = group.members[member_id]
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        if state is _EMPTY:
            return ErrorCode.unknown_member_id
        self.touch_session(group, member)
        if state is _PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return _NONE  # CompletingRebalance and Stable

    # --- LeaveGroup -----------------------------------------------------------------------

    def leave(self, group_id: str, leaving: list[LeavingMember]) -> tuple[LeaveResult, GroupResult | None]:
        if not group_id:
            return LeaveResult(ErrorCode.invalid_group_id, ()), None
        group = self.groups.get(group_id)
        if group is None:
            return LeaveResult(ErrorCode.none, tuple(
                (m.member_id, m.group_instance_id, ErrorCode.unknown_member_id) for m in leaving)), None
        if group.is_in(S.DEAD):
            return LeaveResult(ErrorCode.coordinator_not_available, ()), None
        responses: list[tuple[str, str | None, ErrorCode]] = []
        left: list[str] = []
        for m in leaving:
            reason = m.reason or "not provided"
            if m.member_id == UNKNOWN_MEMBER_ID:
                # administrative removal by group instance id
                target = group.static_member_id(m.group_instance_id) if m.group_instance_id is not None else None
                if target is None:
                    responses.append((m.member_id, m.group_instance_id, ErrorCode.unknown_member_id))
                    continue
                self._remove_leaving_member(group, target, reason)
                left.append(target)
            elif group.is_pending_member(m.member_id):
                group.remove(m.member_id)
                self.cancel_session(group_id, m.member_id)
                log.info("pending member left group", group=group_id, member=m.member_id, reason=reason)
                left.append(m.member_id)
            else:
                try:
                    group.validate_member(m.member_id, m.group_instance_id)
                except KafkaError as exc:
                    responses.append((m.member_id, m.group_instance_id, exc.code))
                    continue
                self._remove_leaving_member(group, m.member_id, reason)
                left.append(m.member_id)
            responses.append((m.member_id, m.group_instance_id, ErrorCode.none))
        result = None
        if left:
            detail = f"explicit LeaveGroup for {len(left)} member(s): {', '.join(left[:5])}"
            if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
                result = self.maybe_prepare_rebalance_or_complete_join(group, "member_left", detail)
            elif group.is_in(S.PREPARING_REBALANCE):
                result = self.maybe_complete_join_phase(group)
        return LeaveResult(ErrorCode.none, tuple(responses)), result

    def _remove_leaving_member(self, group: ClassicGroup, member_id: str, reason: str) -> None:
        """removeCurrentMemberFromClassicGroup."""
        member = group.members[member_id]
        self.cancel_session(group.group_id, member_id, member)
        log.info("member left group", group=group.group_id, member=member_id,
                 instance=member.group_instance_id, reason=reason)
        group.complete_join(member, JoinResult(ErrorCode.unknown_member_id, UNKNOWN_MEMBER_ID))
        group.remove(member_id)
