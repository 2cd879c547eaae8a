"""The durable records the group coordinator writes, as plain values.

One type per record kind, shared by the live path and the loader; they become bytes
only at the log boundary (record_codec.py):

* `GroupMetadataRecord(group_id, value)`: GroupMetadataKey v2 + GroupMetadataValue
  (storage.records' value type, Kafka's schema field for field); `value=None` is the
  tombstone of a deleted group.
* `OffsetCommitRecord(group, topic, partition, value)`: OffsetCommitKey v1 +
  `OffsetValue`; `value=None` is the tombstone of a deleted or expired offset.

Offset records are NamedTuples, not dataclasses: an OffsetCommit of 10 partitions
builds 20 of them on the hot path, and tuple construction is several times cheaper
than a frozen dataclass. `OffsetValue` has the field names of
storage.records.OffsetCommitValue, so storage.expiry's KIP-211 rules read it as is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, final

from storage.records import GroupMetadataValue, MemberMetadata

__all__ = ["GroupMetadataRecord", "GroupMetadataValue", "MemberMetadata", "OffsetCommitRecord",
           "OffsetValue", "Record", "NO_EXPIRE"]

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


Record = GroupMetadataRecord | OffsetCommitRecord
