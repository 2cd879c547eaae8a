"""A KIP-848 consumer group: Kafka's ConsumerGroup (modern/consumer/ConsumerGroup.java) as plain state.

Only replay changes it (groups/consumer/replay.py applies each record), live and on load alike; operations read
it to decide which records to write. The derived views -- subscribed topic names with their counts, the
preferred server assignor, static members, who owns which partition at which epoch, the group state -- are
kept up to date by `update_member` / `remove_member`, as Kafka's group does.

`copy()` gives an independent group for a write that may fail: the shard replays a live write into a copy and
puts the original back when the write fails (Kafka reverts to its last committed snapshot).
"""

from __future__ import annotations

from collections import Counter
from enum import Enum

from coordinator.groups.consumer.model import (
    EMPTY_ASSIGNMENT,
    NO_OWNER_EPOCH,
    Assignment,
    ConsumerGroupMember,
    MemberState,
    TopicId,
    TopicMetadata,
)
from coordinator.groups.consumer.partition_epochs import PartitionEpochs

PROTOCOL_TYPE = "consumer"


class ConsumerGroupState(Enum):
    """The value is what DescribeGroups / ListGroups / ConsumerGroupDescribe print (Kafka's toString)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class ConsumerGroup:
    group_type = "consumer"  # ListGroups' GroupType (KIP-848)
    protocol_type = PROTOCOL_TYPE

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = -1  # no target assignment yet (TargetAssignmentMetadata tombstone: -1)
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target_assignment: dict[str, Assignment] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.subscribed_topic_names: Counter[str] = Counter()
        self.server_assignors: Counter[str] = Counter()
        self.classic_members = 0  # members that speak the classic protocol (numClassicProtocolMembers)
        self.classic_protocols: Counter[str] = Counter()  # their JoinGroup protocol names, counted
        self.subscription_metadata: dict[str, TopicMetadata] = {}  # ConsumerGroupPartitionMetadata
        self.partition_epochs = PartitionEpochs()
        self.state = ConsumerGroupState.EMPTY

    def __repr__(self) -> str:
        return f"ConsumerGroup({self.group_id!r}, {self.state.value}, epoch={self.group_epoch})"

    def copy(self) -> ConsumerGroup:
        other = ConsumerGroup.__new__(ConsumerGroup)
        other.group_id = self.group_id
        other.group_epoch = self.group_epoch
        other.assignment_epoch = self.assignment_epoch
        other.members = dict(self.members)
        other.target_assignment = dict(self.target_assignment)
        other.static_members = dict(self.static_members)
        other.subscribed_topic_names = Counter(self.subscribed_topic_names)
        other.server_assignors = Counter(self.server_assignors)
        other.classic_members = self.classic_members
        other.classic_protocols = Counter(self.classic_protocols)
        other.subscription_metadata = dict(self.subscription_metadata)
        other.partition_epochs = self.partition_epochs.copy()
        other.state = self.state
        return other

    # --- reads ---------------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return self.state is ConsumerGroupState.EMPTY

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return None if member_id is None else self.members.get(member_id)

    def target_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """ConsumerGroup.targetAssignment(memberId, instanceId): a static member's target is kept under the member
        id that holds its instance id."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            return EMPTY_ASSIGNMENT if previous is None else self.target_assignment.get(previous, EMPTY_ASSIGNMENT)
        return self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)

    def partition_epoch(self, topic_id: TopicId, partition: int) -> int:
        return self.partition_epochs.partition_epoch(topic_id, partition)

    def preferred_assignor(self, old: ConsumerGroupMember | None = None,
                           new: ConsumerGroupMember | None = None) -> str | None:
        """The server assignor most members name, counting `new` instead of `old` (computePreferredServerAssignor);
        None when no member names one."""
        counts = Counter(self.server_assignors)
        _count(counts, old.server_assignor_name if old else None, -1)
        _count(counts, new.server_assignor_name if new else None, +1)
        best = max(counts.items(), key=lambda item: item[1], default=None)
        return None if best is None else best[0]

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """supportsClassicProtocols: a JoinGroup's protocols fit when they are the consumer protocol's and one of
        them is supported by every classic member (any one when the group is empty)."""
        if protocol_type != PROTOCOL_TYPE:
            return False
        if self.is_empty:
            return bool(names)
        return any(self.classic_protocols[name] == self.classic_members for name in names)

    def all_classic_except(self, leaving: set[str]) -> bool:
        """allMembersUseClassicProtocolExcept: every member but `leaving` (members of the group) speaks the classic
        protocol."""
        others = [m for m in self.members.values() if m.member_id not in leaving]
        return len(others) == self.classic_members - sum(
            1 for m in leaving if (member := self.members.get(m)) is not None and member.classic is not None)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """waitingOnUnreleasedPartition: a partition of its target it does not own is still owned by another."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target_assignment.get(member.member_id, EMPTY_ASSIGNMENT).items():
            owned = member.assigned_partitions.get(topic_id, frozenset())
            if any(p not in owned and self.partition_epoch(topic_id, p) != NO_OWNER_EPOCH for p in partitions):
                return True
        return False

    def subscribed_names_with(self, old: ConsumerGroupMember | None,
                              new: ConsumerGroupMember | None) -> Counter[str]:
        """computeSubscribedTopicNames: the group's subscribed names were `old` replaced by `new`."""
        counts = Counter(self.subscribed_topic_names)
        if old is not None:
            for name in old.subscribed_topic_names:
                _count(counts, name, -1)
        if new is not None:
            for name in new.subscribed_topic_names:
                _count(counts, name, +1)
        return counts

    # --- changes (replay only) -----------------------------------------------------------

    def update_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        self.members[new.member_id] = new
        self._account(old, -1)
        self._account(new, +1)
        self.partition_epochs.update_member(old, new)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        self.refresh_state()

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._account(old, -1)
        self.partition_epochs.remove_member(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.refresh_state()

    def set_target(self, member_id: str, assignment: Assignment | None) -> None:
        if assignment is None:
            self.target_assignment.pop(member_id, None)
        else:
            self.target_assignment[member_id] = assignment

    def refresh_state(self) -> None:
        """ConsumerGroup.maybeUpdateGroupState."""
        if not self.members:
            self.state = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            self.state = ConsumerGroupState.ASSIGNING
        elif any(not reconciled_to(m, self.assignment_epoch) for m in self.members.values()):
            self.state = ConsumerGroupState.RECONCILING
        else:
            self.state = ConsumerGroupState.STABLE

    def _account(self, member: ConsumerGroupMember | None, sign: int) -> None:
        if member is None:
            return
        for name in member.subscribed_topic_names:
            _count(self.subscribed_topic_names, name, sign)
        _count(self.server_assignors, member.server_assignor_name, sign)
        if member.classic is not None:
            self.classic_members += sign
            for protocol in member.classic.supported_protocols:
                _count(self.classic_protocols, protocol.name, sign)


def reconciled_to(member: ConsumerGroupMember, epoch: int) -> bool:
    """ConsumerGroupMember.isReconciledTo: stable at the target epoch."""
    return member.state is MemberState.STABLE and member.member_epoch == epoch


def _count(counts: Counter[str], key: str | None, delta: int) -> None:
    if key is None:
        return
    value = counts[key] + delta
    if value > 0:
        counts[key] = value
    else:
        counts.pop(key, None)
