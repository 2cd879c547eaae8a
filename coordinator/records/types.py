"""The durable records the group coordinator writes, as plain values.

One type per record kind, shared by the live path and the loader; they become bytes
only at the log boundary (records/log_codec.py):

* `GroupMetadataRecord(group_id, value)`: GroupMetadataKey v2 + GroupMetadataValue
  (storage.records' value type, Kafka's schema field for field); `value=None` is the
  tombstone of a deleted group.
* `OffsetCommitRecord(group, topic, partition, value)`: OffsetCommitKey v1 +
  `OffsetValue`; `value=None` is the tombstone of a deleted or expired offset.
* KIP-848 consumer groups (storage.consumer_group_records, record types 3-8 and 16), one
  record per Kafka record type, `None` in the value field for a tombstone:
  `ConsumerGroupEpochRecord` (ConsumerGroupMetadata), `ConsumerGroupSubscriptionMetadataRecord`
  (ConsumerGroupPartitionMetadata), `ConsumerGroupMemberSubscriptionRecord`
  (ConsumerGroupMemberMetadata), `ConsumerGroupTargetAssignmentEpochRecord`
  (ConsumerGroupTargetAssignmentMetadata), `ConsumerGroupTargetAssignmentRecord`
  (ConsumerGroupTargetAssignmentMember), `ConsumerGroupCurrentAssignmentRecord`
  (ConsumerGroupCurrentMemberAssignment), `ConsumerGroupRegularExpressionRecord`.
  Assignments are model.Assignment ({topic id: frozenset of partitions}); the codec writes
  topics and partitions sorted.
* KIP-932 share groups (storage.share_group_records, record types 10-15; 9 is read only):
  `ShareGroupRecord(key, value)`, the storage key and value (None: a tombstone) as they are;
  coordinator/groups/share/model.py replays them.

Offset records are NamedTuples, not dataclasses: an OffsetCommit of 10 partitions
builds 20 of them on the hot path, and tuple construction is several times cheaper
than a frozen dataclass. `OffsetValue` has the field names of
storage.records.OffsetCommitValue, so rules/offset_expiry.py's KIP-211 rules read it as is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, final

from coordinator.groups.consumer.model import Assignment, MemberState
from storage.consumer_group_records import ConsumerGroupMemberMetadataValue, TopicMetadata
from storage.records import GroupMetadataValue, MemberMetadata

__all__ = ["GroupMetadataRecord", "GroupMetadataValue", "MemberMetadata", "OffsetCommitRecord",
           "OffsetValue", "Record", "NO_EXPIRE", "ConsumerGroupEpochRecord", "ConsumerGroupSubscriptionMetadataRecord",
           "ConsumerGroupMemberSubscriptionRecord", "ConsumerGroupTargetAssignmentEpochRecord",
           "ConsumerGroupTargetAssignmentRecord", "ConsumerGroupCurrentAssignmentRecord",
           "ConsumerGroupRegularExpressionRecord", "CurrentAssignment", "ResolvedRegularExpression",
           "ConsumerGroupMemberMetadataValue", "TopicMetadata", "ConsumerGroupRecord", "CONSUMER_GROUP_RECORD_TYPES",
           "ShareGroupRecord"]

NO_EXPIRE = -1


class OffsetValue(NamedTuple):
    """OffsetCommitValue: written as v3, or v1 when `expire_timestamp` is set (!= -1)."""

    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = NO_EXPIRE


@final  # final: `type(record) is OffsetCommitRecord` (the fast test the codecs use) narrows for mypy
class OffsetCommitRecord(NamedTuple):
    group: str
    topic: str
    partition: int
    value: OffsetValue | None  # None: tombstone

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@final
@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    """One GroupMetadata record: key (group id) and value, None for a tombstone."""

    group_id: str
    value: GroupMetadataValue | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


# --- KIP-848 consumer groups ------------------------------------------------------------------


class _Tombstone:
    """`is_tombstone`: the record's value field (CONSUMER_GROUP_RECORD_TYPES) is None."""

    __slots__ = ()

    @property
    def is_tombstone(self) -> bool:
        return getattr(self, CONSUMER_GROUP_RECORD_TYPES[type(self)][1]) is None


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupEpochRecord(_Tombstone):
    """ConsumerGroupMetadataKey (3) + Value: the group epoch. `metadata_hash` is 4.1's tagged field
    (0: not written, as 4.0)."""

    group_id: str
    epoch: int | None
    metadata_hash: int = 0


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupSubscriptionMetadataRecord(_Tombstone):
    """ConsumerGroupPartitionMetadataKey (4) + Value: the subscribed topics' metadata (4.0 writes it)."""

    group_id: str
    topics: tuple[TopicMetadata, ...] | None


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberSubscriptionRecord(_Tombstone):
    """ConsumerGroupMemberMetadataKey (5) + Value: a member's subscription and client fields."""

    group_id: str
    member_id: str
    value: ConsumerGroupMemberMetadataValue | None


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentEpochRecord(_Tombstone):
    """ConsumerGroupTargetAssignmentMetadataKey (6) + Value: the epoch of the target assignment."""

    group_id: str
    assignment_epoch: int | None


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentRecord(_Tombstone):
    """ConsumerGroupTargetAssignmentMemberKey (7) + Value: one member's target assignment."""

    group_id: str
    member_id: str
    assignment: Assignment | None


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    """ConsumerGroupCurrentMemberAssignmentValue, with model types."""

    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned_partitions: Assignment
    partitions_pending_revocation: Assignment


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentAssignmentRecord(_Tombstone):
    """ConsumerGroupCurrentMemberAssignmentKey (8) + Value: a member's epochs, state and owned partitions."""

    group_id: str
    member_id: str
    value: CurrentAssignment | None


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """ConsumerGroupRegularExpressionValue: the topics a regex matched, at which metadata version and when."""

    topics: frozenset[str]
    version: int
    timestamp: int


@final
@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionRecord(_Tombstone):
    """ConsumerGroupRegularExpressionKey (16) + Value: a resolved subscription regex of the group."""

    group_id: str
    regex: str
    value: ResolvedRegularExpression | None


ConsumerGroupRecord = (ConsumerGroupEpochRecord | ConsumerGroupSubscriptionMetadataRecord
                       | ConsumerGroupMemberSubscriptionRecord | ConsumerGroupTargetAssignmentEpochRecord
                       | ConsumerGroupTargetAssignmentRecord | ConsumerGroupCurrentAssignmentRecord
                       | ConsumerGroupRegularExpressionRecord)
#: record class -> (Kafka record type, the field that is None in a tombstone)
CONSUMER_GROUP_RECORD_TYPES: dict[type, tuple[int, str]] = {
    ConsumerGroupEpochRecord: (3, "epoch"),
    ConsumerGroupSubscriptionMetadataRecord: (4, "topics"),
    ConsumerGroupMemberSubscriptionRecord: (5, "value"),
    ConsumerGroupTargetAssignmentEpochRecord: (6, "assignment_epoch"),
    ConsumerGroupTargetAssignmentRecord: (7, "assignment"),
    ConsumerGroupCurrentAssignmentRecord: (8, "value"),
    ConsumerGroupRegularExpressionRecord: (16, "value"),
}



class ShareGroupRecord(NamedTuple):
    """A KIP-932 share-group record: storage.share_group_records' key and value (None: a tombstone)."""

    key: Any
    value: Any


Record = GroupMetadataRecord | OffsetCommitRecord | ConsumerGroupRecord | ShareGroupRecord
