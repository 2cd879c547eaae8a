"""The values KIP-848 consumer groups are made of (Kafka's ConsumerGroupMember, Assignment, MemberState,
the assignor's GroupSpec / SubscribedTopicDescriber), as immutable Python values.

An assignment maps a topic id to the partitions of that topic: `{uuid: frozenset({0, 1})}`; a topic with
no partitions never appears. Members are frozen: every change makes a new one (`dataclasses.replace`),
as Kafka's ConsumerGroupMember.Builder does, so the group can compare the old and the new member to
decide which records to write.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from storage.consumer_group_records import ClassicMemberMetadata

TopicId = uuid.UUID
Assignment = Mapping[TopicId, frozenset[int]]
EMPTY_ASSIGNMENT: Assignment = {}

#: member epochs with a meaning of their own (ConsumerGroupHeartbeatRequest)
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
#: the epoch of a partition nobody owns (CurrentAssignmentBuilder's currentPartitionEpoch)
NO_OWNER_EPOCH = -1


class MemberState(Enum):
    """Kafka's MemberState; the value is the byte stored in ConsumerGroupCurrentMemberAssignmentValue.State."""

    STABLE = 0  # the member owns its target assignment at the target epoch
    UNREVOKED_PARTITIONS = 1  # it must first give up partitions (PartitionsPendingRevocation)
    UNRELEASED_PARTITIONS = 2  # it waits for partitions other members still own
    UNKNOWN = 127


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One member of a consumer group: its subscription (ConsumerGroupMemberMetadataValue) and its
    current assignment (ConsumerGroupCurrentMemberAssignmentValue)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor_name: str | None = None
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    #: set for a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) in a consumer group:
    #: its session timeout and JoinGroup protocols (ConsumerGroupMemberMetadataValue.ClassicMemberMetadata)
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """What an assignor knows of a topic (SubscribedTopicDescriber)."""

    topic_id: TopicId
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """An assignor's view of a member (MemberSubscriptionAndAssignmentSpec): the topic ids it subscribes
    to (resolved from names and regex, only topics that exist) and its current target assignment, which
    sticky assignors keep as much as they can."""

    member_id: str
    subscribed_topic_ids: frozenset[TopicId]
    assignment: Assignment = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None


class PartitionAssignor(Protocol):
    """A server-side assignor (ConsumerGroupPartitionAssignor): `name` is what clients and
    `group.consumer.assignors` call it."""

    name: str

    def assign(self, members: Mapping[str, MemberSubscription],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        """The new target assignment of every member in `members` (a member with nothing gets {})."""
        ...
