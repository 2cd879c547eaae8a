"""The rebalance engine of one shard: delayed join completion, session and sync expiry.

This is the part of Kafka's GroupMetadataManager that runs on timers and moves a
classic group through PreparingRebalance -> CompletingRebalance (-> Stable once the
leader's assignment is stored, see membership.py). Method names follow Kafka's
(prepareRebalance, completeClassicGroupJoin, expirePendingSync, ...), so each can be read
next to its original.

This module never writes. Operations that change what the log must hold return a
`GroupResult` (groups/result.py, Kafka's CoordinatorResult): the records, and what runs once
they are written; the shard writes it (a classic group's GroupMetadata record describes the
state this module has already changed, see runtime/shard.py). Timers fire through the shard
too: a timer operation returns its result, and the shard's KeyedTimers hand it to the shard
to write (Kafka's TimeoutOperation). Timer-driven writes only WARN on failure, as in Kafka.
A group tombstone's replay calls `remove_group`, and a failed tombstone write `restore_group`.

Timer keys, per shard: ("join", group) for join completion and the initial delay,
("sync", group) for sync expiry, ("session", group, member) for heartbeat and
pending-member expiry. A session timer is armed once per member and re-armed lazily:
heartbeats only move `member.session_deadline_ms` (O(1), no timer work).
"""

from __future__ import annotations

from typing import NamedTuple

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import logged_by_storage, write_error_code
from coordinator.groups.classic_group import (
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    GroupState,
    IllegalStateTransition,
    OpenRebalance,
    RebalanceRecord,
)
from coordinator.groups.classic_member import EMPTY_ASSIGNMENT, JoinResult, Member, SyncResult
from coordinator.groups.context import GroupContext
from coordinator.groups.result import GroupResult, OnWritten, store_group

log = structlog.get_logger("coordinator.groups")

S = GroupState
HISTORY_MEMBER_IDS = 100  # member ids kept per rebalance record, joined and left each


class RemovedGroup(NamedTuple):
    """A group a tombstone's replay removed, with what it was (see Rebalancer.restore_group)."""

    group: ClassicGroup
    state: GroupState
    previous_state: GroupState
    state_timestamp: int
    sessions: dict[str, float]  # member id -> session timer deadline


class Rebalancer:
    def __init__(self, context: GroupContext) -> None:
        self.groups = context.groups
        self.timers = context.timers
        self.settings = context.settings
        self.clock = context.clock
        self.stats = context.stats
        # one bound method for every session timer of the shard: timers store it per key, and a
        # method or closure made per arm would be one more GC-tracked object per member
        self._on_session_timer = self._session_timer_fired

    # --- records ----------------------------------------------------------

    @staticmethod
    def _warn_on_failure(group_id: str, what: str) -> OnWritten:
        def check(error: BaseException | None) -> None:
            if error is not None:
                (log.debug if logged_by_storage(error) else log.warning)(
                    "failed to store group metadata", group=group_id, what=what, error=write_error_code(error).name)

        return check

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

    def _session_timer_fired(self, group_id: str, member_id: str) -> GroupResult | None:
        """expireClassicGroupMemberHeartbeat, after checking whether the deadline moved."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return None
        if group.is_pending_member(member_id):
            log.info("pending member expired", group=group_id, member=member_id)
            return self.remove_pending_member_and_update(group, member_id)
        member = group.members.get(member_id)
        if member is None:
            return None
        member.armed_at = None
        if self.clock.now_ms() < member.session_deadline_ms:  # heartbeats moved the deadline
            self._arm_session(group_id, member, member.session_deadline_ms)
            return None
        if not member.has_satisfied_heartbeat():
            log.info("member session expired", group=group_id, member=member_id,
                     session_timeout_ms=member.session_timeout_ms)
            return self.remove_member_and_update(group, member, "session_timeout",
                                                 f"member {member_id} missed its session timeout")
        return None

    # --- removing and restoring whole groups (the replay of a group tombstone) --------

    def remove_group(self, group: ClassicGroup) -> RemovedGroup:
        """The group goes Dead and out of the shard, its timers stop; the result is what
        `restore_group` needs to take that back when the tombstone's write fails."""
        group_id = group.group_id
        sessions = {}
        for member_id in (*group.members, *group.pending_join_members):
            key = ("session", group_id, member_id)
            deadline = self.timers.deadline(key)
            if deadline is not None:
                sessions[member_id] = deadline
                self.timers.cancel(key)
        removed = RemovedGroup(group, group.state, group.previous_state, group.state_timestamp, sessions)
        if group.state is not S.DEAD:
            group.transition_to(S.DEAD, self.clock.wall_ms())
        self.groups.pop(group_id, None)
        self.timers.cancel(("join", group_id))
        self.timers.cancel(("sync", group_id))
        return removed

    def restore_group(self, removed: RemovedGroup) -> None:
        """The group back as `remove_group` found it, session timers at their deadlines.

        Join and sync timers are not re-armed: a group that is deleted is Empty (DeleteGroups,
        expiry), and an Empty group has none that would act."""
        group = removed.group
        group.state, group.previous_state, group.state_timestamp = removed.state, removed.previous_state, \
            removed.state_timestamp
        self.groups[group.group_id] = group
        for member_id, deadline in removed.sessions.items():
            member = group.members.get(member_id)
            if member is not None:
                self._arm_session(group.group_id, member, deadline)
            else:
                self.timers.schedule_at(("session", group.group_id, member_id), deadline, self._on_session_timer,
                                        group.group_id, member_id)

    # --- removing members --------------------------------------------------------

    def remove_member_and_update(self, group: ClassicGroup, member: Member, cause: str,
                                 detail: str) -> GroupResult | None:
        """removeMemberAndUpdateClassicGroup: a waiting JoinGroup gets UNKNOWN_MEMBER_ID first."""
        group.complete_join(member, JoinResult(ErrorCode.unknown_member_id, UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            return self.maybe_prepare_rebalance_or_complete_join(group, cause, detail)
        if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            return self.complete_join(group)
        return None

    def remove_pending_member_and_update(self, group: ClassicGroup, member_id: str) -> GroupResult | None:
        group.remove(member_id)
        if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            return self.complete_join(group)
        return None

    # --- preparing a rebalance ---------------------------------------------------

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, cause: str,
                                                 detail: str) -> GroupResult | None:
        if group.can_rebalance():
            return self.prepare_rebalance(group, cause, detail)
        return self.maybe_complete_join_phase(group)

    def prepare_rebalance(self, group: ClassicGroup, cause: str, detail: str) -> GroupResult | None:
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

    def _initial_delay_fired(self, group_id: str, delay: int, remaining: int) -> GroupResult | None:
        """tryCompleteInitialRebalanceElseSchedule: each new joiner buys one more delay."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.settings.initial_rebalance_delay_ms, remaining)
            self._schedule_initial_delay(group_id, new_delay, max(remaining - delay, 0))
            return None
        return self.complete_join(group)

    def maybe_complete_join_else_schedule(self, group: ClassicGroup) -> GroupResult | None:
        if group.has_all_members_joined():
            return self.complete_join(group)
        self._schedule_join_timeout(group)
        return None

    def _schedule_join_timeout(self, group: ClassicGroup) -> None:
        group_id = group.group_id
        self.timers.schedule(("join", group_id), group.rebalance_timeout_ms(), self._join_timeout_fired, group_id)

    def _join_timeout_fired(self, group_id: str) -> GroupResult | None:
        group = self.groups.get(group_id)
        return None if group is None else self.complete_join(group)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> GroupResult | None:
        """Completes the join now if every member is in, except during the initial delay."""
        if not group.is_in(S.PREPARING_REBALANCE):
            return None
        if group.previous_state is S.EMPTY:
            return None  # the initial rebalance ends on its timer
        if not group.has_all_members_joined():
            return None
        return self.complete_join(group)

    # --- completing the join phase --------------------------------------------------

    def complete_join(self, group: ClassicGroup) -> GroupResult | None:
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
            result = store_group(group, {}, self._warn_on_failure(group_id, "empty group"))
            self._close_rebalance(group, "empty")
            return result
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

    def _sync_expired(self, group_id: str, generation: int) -> GroupResult | None:
        """expirePendingSync: members that never sent SyncGroup are removed; rebalance."""
        group = self.groups.get(group_id)
        if group is None or generation != group.generation_id:
            return None
        if group.state not in (S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync_members:
            return None
        missing = sorted(group.pending_sync_members)
        for member_id in missing:
            member = group.remove(member_id)
            self.cancel_session(group_id, member_id, member)
        log.info("members removed: no SyncGroup in time", group=group_id, members=missing)
        return self.prepare_rebalance(group, "sync_timeout", f"removed {len(missing)} members that did not sync")

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
            group.open_rebalance = OpenRebalance(cause, detail, self.clock.now_ms(), self.clock.wall_ms())
            self.stats.rebalance_started(cause)

    def _close_rebalance(self, group: ClassicGroup, outcome: str) -> None:
        opened = group.open_rebalance
        if opened is None:
            return
        group.open_rebalance = None
        before, now = group.generation_members, group.members
        group.generation_members = frozenset(now)
        joined = tuple(m for m in now if m not in before)[:HISTORY_MEMBER_IDS]
        left = tuple(m for m in before if m not in now)[:HISTORY_MEMBER_IDS]
        cause, detail = opened.cause, opened.detail
        record = RebalanceRecord(cause, detail, group.generation_id, len(group.members),
                                 round(self.clock.now_ms() - opened.started_ms, 3), outcome,
                                 opened.started_wall_ms, joined, left)
        group.rebalances.append(record)
        log.info("rebalance", group=group.group_id, cause=cause, detail=detail, generation=record.generation,
                 members=record.members, duration_ms=record.duration_ms, outcome=outcome)
