"""The rebalance engine of one shard: delayed join completion, session and sync expiry.

This is the part of Kafka's GroupMetadataManager that runs on timers and moves a
classic group through PreparingRebalance -> CompletingRebalance (-> Stable once the
leader's assignment is stored, see membership.py). Method names follow Kafka's
(prepareRebalance, completeClassicGroupJoin, expirePendingSync, ...), so each can be read
next to its original.

Operations that write records return the `PendingWrite` (Kafka's CoordinatorResult), so a
request whose answer depends on them (LeaveGroup) can wait; timer-driven writes are
fire-and-forget with a WARN on failure, as in Kafka.

Timer keys, per shard: ("join", group) for join completion and the initial delay,
("sync", group) for sync expiry, ("session", group, member) for heartbeat and
pending-member expiry. A session timer is armed once per member and re-armed lazily:
heartbeats only move `member.session_deadline_ms` (O(1), no timer work).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import write_error_code
from coordinator.groups.classic_group import (
    EMPTY_ASSIGNMENT,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    GroupState,
    IllegalStateTransition,
    JoinResult,
    Member,
    RebalanceRecord,
    SyncResult,
)
from coordinator.records import GroupMetadataRecord

if TYPE_CHECKING:
    from coordinator.runtime.shard import Shard
    from coordinator.runtime.writes import PendingWrite

log = structlog.get_logger("coordinator.groups")

S = GroupState


class Rebalancer:
    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self.groups = shard.groups
        self.timers = shard.timers
        self.settings = shard.settings
        self.clock = shard.scheduler
        # one bound method for every session timer of the shard: timers store it per key, and a
        # method or closure made per arm would be one more GC-tracked object per member
        self._on_session_timer = self._session_timer_fired

    # --- records ----------------------------------------------------------

    def write_group(self, group: ClassicGroup, assignment: dict[str, bytes]) -> PendingWrite:
        record = GroupMetadataRecord(group.group_id, group.metadata_value(assignment))
        return self.shard.write([record])

    def _warn_on_failure(self, write: PendingWrite, group_id: str, what: str) -> None:
        def check(error: BaseException | None) -> None:
            if error is not None:
                log.warning("failed to store group metadata", group=group_id, what=what,
                            error=write_error_code(error).name)

        write.add_callback(check)

    # --- session timers ------------------------------------------------------

    def touch_session(self, group: ClassicGroup, member: Member, timeout_ms: float | None = None) -> None:
        """Kafka's rescheduleClassicGroupMemberHeartbeat, with a lazily re-armed timer."""
        deadline = self.clock.now_ms() + (member.session_timeout_ms if timeout_ms is None else timeout_ms)
        member.session_deadline_ms = deadline
        armed = member.armed_at
        if armed is None or armed > deadline:
            self._arm_session(group.group_id, member, deadline)

    def _arm_session(self, group_id: str, member: Member, when: float) -> None:
        member.armed_at = when
        member_id = member.member_id
        self.timers.schedule_at(("session", group_id, member_id), when, self._on_session_timer, group_id, member_id)

    def cancel_session(self, group_id: str, member_id: str, member: Member | None = None) -> None:
        self.timers.cancel(("session", group_id, member_id))
        if member is not None:
            member.armed_at = None

    def schedule_pending_member_expiry(self, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
        group_id = group.group_id
        self.timers.schedule(("session", group_id, member_id), timeout_ms, self._on_session_timer, group_id, member_id)

    def _session_timer_fired(self, group_id: str, member_id: str) -> None:
        """expireClassicGroupMemberHeartbeat, after checking whether the deadline moved."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return
        if group.is_pending_member(member_id):
            log.info("pending member expired", group=group_id, member=member_id)
            self.remove_pending_member_and_update(group, member_id)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        member.armed_at = None
        if self.clock.now_ms() < member.session_deadline_ms:  # heartbeats moved the deadline
            self._arm_session(group_id, member, member.session_deadline_ms)
            return
        if not member.has_satisfied_heartbeat():
            log.info("member session expired", group=group_id, member=member_id,
                     session_timeout_ms=member.session_timeout_ms)
            self.remove_member_and_update(group, member, "session_timeout",
                                          f"member {member_id} missed its session timeout")

    # --- removing members --------------------------------------------------------

    def remove_member_and_update(self, group: ClassicGroup, member: Member, cause: str,
                                 detail: str) -> PendingWrite | None:
        """removeMemberAndUpdateClassicGroup: a waiting JoinGroup gets UNKNOWN_MEMBER_ID first."""
        group.complete_join(member, JoinResult(ErrorCode.unknown_member_id, UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            return self.maybe_prepare_rebalance_or_complete_join(group, cause, detail)
        if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            return self.complete_join(group)
        return None

    def remove_pending_member_and_update(self, group: ClassicGroup, member_id: str) -> PendingWrite | None:
        group.remove(member_id)
        if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            return self.complete_join(group)
        return None

    # --- preparing a rebalance ---------------------------------------------------

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, cause: str,
                                                 detail: str) -> PendingWrite | None:
        if group.can_rebalance():
            return self.prepare_rebalance(group, cause, detail)
        return self.maybe_complete_join_phase(group)

    def prepare_rebalance(self, group: ClassicGroup, cause: str, detail: str) -> PendingWrite | None:
        if group.is_in(S.COMPLETING_REBALANCE):
            # members waiting in SyncGroup must rejoin
            self.reset_and_propagate_assignment_with_error(group, ErrorCode.rebalance_in_progress)
        self.remove_sync_expiration(group)
        initial = group.is_in(S.EMPTY)
        if initial:
            # InitialDelayedJoin: give more members the chance to join a new group.
            delay = self.settings.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_delay(group.group_id, delay, remaining)
        group.transition_to(S.PREPARING_REBALANCE, self.clock.wall_ms())
        self._open_rebalance(group, cause, detail)
        if initial:
            return None
        return self.maybe_complete_join_else_schedule(group)

    def _schedule_initial_delay(self, group_id: str, delay: int, remaining: int) -> None:
        self.timers.schedule(("join", group_id), delay, self._initial_delay_fired, group_id, delay, remaining)

    def _initial_delay_fired(self, group_id: str, delay: int, remaining: int) -> None:
        """tryCompleteInitialRebalanceElseSchedule: each new joiner buys one more delay."""
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.settings.initial_rebalance_delay_ms, remaining)
            self._schedule_initial_delay(group_id, new_delay, max(remaining - delay, 0))
            return
        self.complete_join(group)

    def maybe_complete_join_else_schedule(self, group: ClassicGroup) -> PendingWrite | None:
        if group.has_all_members_joined():
            return self.complete_join(group)
        self._schedule_join_timeout(group)
        return None

    def _schedule_join_timeout(self, group: ClassicGroup) -> None:
        group_id = group.group_id
        self.timers.schedule(("join", group_id), group.rebalance_timeout_ms(), self._join_timeout_fired, group_id)

    def _join_timeout_fired(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self.complete_join(group)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> PendingWrite | None:
        """Completes the join now if every member is in, except during the initial delay."""
        if not group.is_in(S.PREPARING_REBALANCE):
            return None
        if group.previous_state is S.EMPTY:
            return None  # the initial rebalance ends on its timer
        if not group.has_all_members_joined():
            return None
        return self.complete_join(group)

    # --- completing the join phase --------------------------------------------------

    def complete_join(self, group: ClassicGroup) -> PendingWrite | None:
        """completeClassicGroupJoin: drop dynamic members that did not rejoin, next generation."""
        group_id = group.group_id
        self.timers.cancel(("join", group_id))
        for member in group.not_yet_rejoined():
            if not member.is_static:
                group.remove(member.member_id)
                self.cancel_session(group_id, member.member_id, member)
                log.info("member removed: did not rejoin in time", group=group_id, member=member.member_id)
        if group.is_in(S.DEAD):
            return None
        if not group.maybe_elect_new_joined_leader() and group.members:
            # only static members are left and none rejoined: wait another rebalance timeout
            log.error("group could not complete rebalance because no members rejoined", group=group_id)
            self._schedule_join_timeout(group)
            return None
        group.init_next_generation(self.clock.wall_ms())
        if group.is_in(S.EMPTY):
            write = self.write_group(group, {})
            self._warn_on_failure(write, group_id, "empty group")
            self._close_rebalance(group, "empty")
            return write
        for member in list(group.members.values()):
            member_id = member.member_id
            group.complete_join(member, group.join_result(member_id, members=group.is_leader(member_id)))
            self.touch_session(group, member)
            member.is_new = False
            group.pending_sync_members.add(member_id)
        self._schedule_pending_sync(group)
        return None

    # --- the sync phase ---------------------------------------------------------------

    def _schedule_pending_sync(self, group: ClassicGroup) -> None:
        group_id, generation = group.group_id, group.generation_id
        self.timers.schedule(("sync", group_id), group.rebalance_timeout_ms(), self._sync_expired, group_id, generation)

    def _sync_expired(self, group_id: str, generation: int) -> None:
        """expirePendingSync: members that never sent SyncGroup are removed; rebalance."""
        group = self.groups.get(group_id)
        if group is None or generation != group.generation_id:
            return
        if group.state not in (S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync_members:
            return
        missing = sorted(group.pending_sync_members)
        for member_id in missing:
            member = group.remove(member_id)
            self.cancel_session(group_id, member_id, member)
        log.info("members removed: no SyncGroup in time", group=group_id, members=missing)
        self.prepare_rebalance(group, "sync_timeout", f"removed {len(missing)} members that did not sync")

    def remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timers.cancel(("sync", group.group_id))

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.state in (S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or not group.pending_sync_members:
            self.timers.cancel(("sync", group.group_id))

    def reset_and_propagate_assignment_with_error(self, group: ClassicGroup, error: ErrorCode) -> None:
        if not group.is_in(S.COMPLETING_REBALANCE):
            raise IllegalStateTransition(f"{group.group_id} must be CompletingRebalance, is {group.state.value}")
        for member in group.members.values():
            member.assignment = EMPTY_ASSIGNMENT
        self.propagate_assignment(group, error)

    def set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        if not group.is_in(S.COMPLETING_REBALANCE):
            raise IllegalStateTransition(f"{group.group_id} must be CompletingRebalance, is {group.state.value}")
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, EMPTY_ASSIGNMENT)
        self.propagate_assignment(group, ErrorCode.none)

    def propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error is ErrorCode.none
        protocol_type = group.protocol_type if ok else None
        protocol_name = group.protocol_name if ok else None
        for member in list(group.members.values()):
            result = SyncResult(error, protocol_type, protocol_name, member.assignment)
            if group.complete_sync(member, result):
                # a session that ran out while waiting for the leader or the write restarts now
                self.touch_session(group, member)

    # --- the rebalance log -------------------------------------------------------------

    def _open_rebalance(self, group: ClassicGroup, cause: str, detail: str) -> None:
        if group.open_rebalance is None:
            group.open_rebalance = (cause, detail, self.clock.now_ms())

    def _close_rebalance(self, group: ClassicGroup, outcome: str) -> None:
        opened = group.open_rebalance
        if opened is None:
            return
        group.open_rebalance = None
        cause, detail, started = opened
        record = RebalanceRecord(cause, detail, group.generation_id, len(group.members),
                                 round(self.clock.now_ms() - started, 3), outcome)
        group.rebalances.append(record)
        log.info("rebalance", group=group.group_id, cause=cause, detail=detail, generation=record.generation,
                 members=record.members, duration_ms=record.duration_ms, outcome=outcome)
