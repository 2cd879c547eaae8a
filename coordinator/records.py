"""The durable records the group coordinator writes, as plain values.

They mirror Kafka's __consumer_offsets schemas field for field (GroupMetadataKey v2 ->
`group_id`, GroupMetadataValue v3 -> `GroupMetadataValue`, its MemberMetadata ->
`MemberMetadata`), so that storage/ can serialize them into Kafka's own format without
knowing anything about groups. A `value` of None is a tombstone (the group was deleted).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """GroupMetadataValue.MemberMetadata (v3 fields)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes  # the member's metadata for the group's chosen protocol
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """GroupMetadataValue v3: what Kafka writes for a classic group."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int  # epoch ms of the last state change, -1 if unknown
    members: tuple[MemberMetadata, ...]


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    """One GroupMetadata record: key (group id) and value, None for a tombstone."""

    group_id: str
    value: GroupMetadataValue | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


Record = GroupMetadataRecord  # offsets records join this union in the offsets issue
