"""A classic consumer group and its members: pure state and the transition table.

Follows Kafka's ClassicGroup / ClassicGroupMember / ClassicGroupState (new group
coordinator). No I/O and no timers live here: a member that waits for a JoinGroup or
SyncGroup answer holds a plain callable (`awaiting_join` / `awaiting_sync`) that the
group completes, and membership.py decides when. Illegal state transitions raise
`IllegalStateTransition`: they are bugs in the caller, never client errors.
"""

from __future__ import annotations

import uuid
from collections import deque
from dataclasses import dataclass
from enum import Enum

from kio.schema.errors import ErrorCode

from coordinator.errors import FencedInstanceId, UnknownMemberId
from coordinator.groups.classic_member import (
    NO_LEADER,
    JoinResult,
    JoinWaiter,
    Member,
    Protocols,
    SyncResult,
)
from coordinator.records.types import GroupMetadataValue, MemberMetadata

UNKNOWN_MEMBER_ID = ""
#: the longest string of a non-flexible message (int16 length), in UTF-8 bytes
MAX_SHORT_STRING_BYTES = 32767
#: room for the client or instance id in a member id: minus "-" and a 36-character UUID
MEMBER_ID_PREFIX_MAX_BYTES = MAX_SHORT_STRING_BYTES - 37


class GroupState(Enum):
    """The value is the name Kafka prints (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = GroupState
# ClassicGroupState: the states each state may be entered from.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}


class IllegalStateTransition(RuntimeError):
    """A transition the table does not allow: a coordinator bug."""


@dataclass(frozen=True, slots=True)
class RebalanceRecord:
    """One finished rebalance, kept for the admin view (GET /groups/{id}/rebalances)."""

    cause: str
    detail: str
    generation: int
    members: int
    duration_ms: float
    outcome: str  # "stable", "empty" or "dead"
    started_wall_ms: int = 0
    joined: tuple[str, ...] = ()  # member ids in the new generation that were not in the old one
    left: tuple[str, ...] = ()  # member ids of the old generation that are gone


@dataclass(frozen=True, slots=True)
class OpenRebalance:
    """A rebalance in progress: why and since when."""

    cause: str
    detail: str
    started_ms: float  # the scheduler's monotonic clock
    started_wall_ms: int


class ClassicGroup:
    def __init__(self, group_id: str, now_wall_ms: int, history: int = 20) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state = GroupState.DEAD
        self.state_timestamp = now_wall_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.pending_join_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.num_awaiting_join = 0
        self.supported_protocols: dict[str, int] = {}
        self.new_member_added = False
        # The rebalance in progress and the finished ones.
        self.open_rebalance: OpenRebalance | None = None
        self.generation_members: frozenset[str] = frozenset()  # the members when the last rebalance ended
        self.rebalances: deque[RebalanceRecord] = deque(maxlen=history)

    @classmethod
    def from_metadata(cls, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        """The group a GroupMetadata record describes (GroupMetadataManager.replay of a
        GroupMetadataValue): Empty without members, else Stable; an empty protocol type
        means none; members support exactly the group's protocol, with their stored
        subscription."""
        group = cls(group_id, value.current_state_timestamp)
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.generation_id = value.generation
        protocol_type = value.protocol_type or ""
        for m in value.members:
            rebalance_timeout = m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout
            member = Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, rebalance_timeout,
                            m.session_timeout, protocol_type, ((value.protocol or "", m.subscription),), m.assignment)
            group.members[m.member_id] = member
            group._count_protocols(member, +1)
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        group.leader_id = value.leader if value.leader in group.members else next(iter(group.members), None)
        group.generation_members = frozenset(group.members)
        if group.members:
            group.state = GroupState.STABLE
            group.previous_state = GroupState.COMPLETING_REBALANCE
        return group

    def __repr__(self) -> str:
        return f"ClassicGroup({self.group_id!r}, {self.state.value}, generation={self.generation_id})"

    # --- state -----------------------------------------------------------

    def is_in(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, target: GroupState, now_wall_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateTransition(
                f"group {self.group_id} cannot go from {self.state.value} to {target.value}")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp = now_wall_ms

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    # --- members ---------------------------------------------------------

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def static_member_id(self, instance_id: str) -> str | None:
        return self.static_members.get(instance_id)

    @staticmethod
    def generate_member_id(client_id: str, instance_id: str | None) -> str:
        """ClassicGroup.generateMemberId: instance id (static) or client id, '-', a UUID.

        The prefix is cut (at a character boundary) so that the id fits the int16-length
        string of GroupMetadataValue and of JoinGroup v0-v5: a 32,767-byte client id would
        make an id Kafka itself cannot persist, and every SyncGroup would fail."""
        prefix = instance_id if instance_id is not None else client_id
        if len(prefix) > MEMBER_ID_PREFIX_MAX_BYTES // 4:  # may be longer than the cap in UTF-8
            raw = prefix.encode()
            if len(raw) > MEMBER_ID_PREFIX_MAX_BYTES:
                prefix = raw[:MEMBER_ID_PREFIX_MAX_BYTES].decode(errors="ignore")
        return f"{prefix}-{uuid.uuid4()}"

    def add(self, member: Member, waiter: JoinWaiter | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already in {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type or not self.supports_protocols(
                member.protocol_type, {name for name, _ in member.protocols}):
            raise ValueError("member's protocols are not supported by the group")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, +1)
        member.awaiting_join = waiter
        if waiter is not None:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.awaiting_join is not None:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
            # Kafka leaves a removed member's pending SyncGroup unanswered; answer it so
            # that the client's connection does not hold a response that never comes.
            self.complete_sync(member, SyncResult(ErrorCode.unknown_member_id))
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def add_pending_member(self, member_id: str) -> None:
        if member_id in self.members:
            raise ValueError(f"pending member {member_id} is already a member")
        self.pending_join_members.add(member_id)

    def update_member(self, member: Member, protocols: Protocols, rebalance_timeout_ms: int,
                      session_timeout_ms: int, waiter: JoinWaiter | None) -> None:
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        replaced = member.awaiting_join
        if waiter is not None and replaced is None:
            self.num_awaiting_join += 1
        elif waiter is None and replaced is not None:
            self.num_awaiting_join -= 1
        member.awaiting_join = waiter
        if waiter is not None and replaced is not None and replaced is not waiter:
            # Kafka drops the older JoinGroup unanswered; here every request gets an answer
            # (responses leave a connection in order). REBALANCE_IN_PROGRESS is retriable and
            # keeps the member id: the client simply rejoins; the newer request is answered.
            replaced(JoinResult(ErrorCode.rebalance_in_progress, member.member_id))

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """The old member id is fenced (its waiting requests get FENCED_INSTANCE_ID)."""
        old = self.members.pop(old_member_id, None)
        if old is None:
            raise ValueError(f"cannot replace unknown member {old_member_id}")
        self.complete_join(old, JoinResult(ErrorCode.fenced_instance_id, old_member_id))
        self.complete_sync(old, SyncResult(ErrorCode.fenced_instance_id))
        new = Member(new_member_id, old.group_instance_id, old.client_id, old.client_host,
                     old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type, old.protocols,
                     old.assignment)
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        return new

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """ClassicGroup.validateMember: FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise UnknownMemberId(f"unknown group instance id {instance_id}")
            if existing != member_id:
                raise FencedInstanceId(f"instance {instance_id} is now member {existing}")
        if member_id not in self.members:
            raise UnknownMemberId(f"unknown member {member_id}")

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """A leader that did not rejoin is replaced by any member that did."""
        if self.leader_id is None:
            return False
        leader = self.members[self.leader_id]
        if leader.awaiting_join is not None:
            return True
        for member in self.members.values():
            if member.awaiting_join is not None:
                self.leader_id = member.member_id
                return True
        return False

    # --- protocols -------------------------------------------------------

    def _count_protocols(self, member: Member, delta: int) -> None:
        counts = self.supported_protocols
        for name, _metadata in member.protocols:
            counts[name] = counts.get(name, 0) + delta

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        size = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == size for name in names)

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that every member supports."""
        if not self.members:
            raise ValueError("cannot select a protocol for an empty group")
        size = len(self.members)
        candidates = {name for name, count in self.supported_protocols.items() if count == size}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # most votes; ties go to the choice of the earliest member (Kafka: HashMap order)
        return max(votes, key=votes.__getitem__)

    # --- waiters ---------------------------------------------------------

    def complete_join(self, member: Member, result: JoinResult) -> bool:
        waiter = member.awaiting_join
        if waiter is None:
            return False
        member.awaiting_join = None
        self.num_awaiting_join -= 1
        waiter(result)
        return True

    def complete_sync(self, member: Member, result: SyncResult) -> bool:
        waiter = member.awaiting_sync
        if waiter is None:
            return False
        member.awaiting_sync = None
        waiter(result)
        return True

    # --- generations -----------------------------------------------------

    def init_next_generation(self, now_wall_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_wall_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_wall_ms)
        self.pending_sync_members.clear()

    def member_list_for_leader(self) -> tuple[tuple[str, str | None, bytes], ...]:
        if self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE):
            raise IllegalStateTransition(f"no member metadata for {self.group_id} in {self.state.value}")
        return tuple((m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                     for m in self.members.values())

    def join_result(self, member_id: str, *, members: bool, leader: str | None = None,
                    skip_assignment: bool = False) -> JoinResult:
        return JoinResult(
            ErrorCode.none, member_id, self.generation_id, self.protocol_type, self.protocol_name,
            self.leader_id or NO_LEADER if leader is None else leader, skip_assignment,
            self.member_list_for_leader() if members else ())

    def group_assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    def metadata_value(self, assignment: dict[str, bytes]) -> GroupMetadataValue:
        """GroupCoordinatorRecordHelpers.newGroupMetadataRecord (GroupMetadataValue v3)."""
        members = tuple(
            MemberMetadata(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                           client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                           session_timeout=m.session_timeout_ms, subscription=m.metadata(self.protocol_name),
                           assignment=assignment[m.member_id])
            for m in self.members.values())
        return GroupMetadataValue(protocol_type=self.protocol_type or "", generation=self.generation_id,
                                  protocol=self.protocol_name, leader=self.leader_id, members=members,
                                  current_state_timestamp=self.state_timestamp)
