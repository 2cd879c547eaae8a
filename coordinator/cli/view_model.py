"""What the groups command shows, as plain values (the renderer and the JSON output read these), and
the decoding of a consumer group member's assignment bytes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rules.consumer_protocol import TopicPartition


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str  # "" when the broker's ListGroups version does not report it (v0-v3)
    protocol_type: str


@dataclass(frozen=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class OffsetRow:
    topic: str
    partition: int
    committed_offset: int | None  # None: the group has no committed offset for the partition
    log_end_offset: int | None  # None: ListOffsets could not tell
    member: Member | None = None  # the member the partition is assigned to

    @property
    def lag(self) -> int | None:
        if self.committed_offset is None or self.log_end_offset is None:
            return None
        return max(0, self.log_end_offset - self.committed_offset)

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic, "partition": self.partition, "committed_offset": self.committed_offset,
            "log_end_offset": self.log_end_offset, "lag": self.lag,
            "member_id": self.member.member_id if self.member else None,
            "client_id": self.member.client_id if self.member else None,
            "host": self.member.host if self.member else None,
        }


@dataclass(frozen=True)
class SharePartitionRow:
    """A share partition of a share group: DescribeShareGroupOffsets' start offset and lag (Kafka 4.2's: log end -
    start offset - records delivered completely), the members it is assigned to, and from the server's HTTP
    listener (--http) the records in flight, acquired and acknowledged (None without it)."""

    topic: str
    partition: int
    start_offset: int | None
    lag: int | None
    member_ids: tuple[str, ...] = ()
    in_flight: int | None = None
    acquired: int | None = None
    acknowledged: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "start_offset": self.start_offset, "lag": self.lag,
                "member_ids": list(self.member_ids), "in_flight": self.in_flight, "acquired": self.acquired,
                "acknowledged": self.acknowledged}


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[Member, ...] = ()
    offsets: tuple[OffsetRow, ...] = ()
    error: str | None = None  # Kafka's error name when the group could not be described
    history: dict[str, Any] | None = field(default=None)  # the HTTP listener's rebalance history
    share_partitions: tuple[SharePartitionRow, ...] | None = None  # a share group's (None: another kind)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "group_id": self.group_id, "state": self.state, "protocol_type": self.protocol_type,
            "protocol": self.protocol,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "host": m.host,
                         "assignment": [{"topic": t, "partition": p} for t, p in m.assignment]}
                        for m in self.members],
            "offsets": [row.as_json() for row in self.offsets],
        }
        if self.share_partitions is not None:
            out["share_partitions"] = [row.as_json() for row in self.share_partitions]
        if self.error is not None:
            out["error"] = self.error
        if self.history is not None:
            out["rebalances"] = self.history.get("rebalances", [])
        return out
