"""Read-only views of this node's groups, offsets and hosted topics, as JSON-ready dicts.

The console, the JSON endpoints and the metrics collector read the same views. Everything is read
on the event loop between requests (the state is the loop's), from the shards this node has loaded;
lag is the hosted partition's high watermark minus the committed offset, and None where this node
does not host the partition (another node's, or a topic of an external cluster).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from coordinator.groups.classic_group import ClassicGroup, GroupState, RebalanceRecord
from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.model import ConsumerGroupMember
from coordinator.ops.share_views import share_header, share_member, share_partitions
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.shard import Shard, ShardState
from coordinator.services import Services
from rules.consumer_protocol import assigned_partitions

if TYPE_CHECKING:
    from coordinator.net.server import Server
    from coordinator.runtime.offsets_topic import OffsetsRuntime


class ServedNode(Protocol):
    """What the operations endpoint reads of the server of this node (coordinator.app.App, which
    imports the endpoint: hence a protocol, not an import)."""

    services: Services
    offsets: OffsetsRuntime
    server: Server | None
    listening: bool


def active_shards(coordinator: GroupCoordinator) -> Iterator[Shard]:
    return (shard for shard in coordinator.all_shards() if shard.state is ShardState.ACTIVE)


def partition_states(coordinator: GroupCoordinator) -> dict[str, list[int]]:
    """The offsets partitions this node owns, by load state: loaded, loading, failed (a load that failed)."""
    states: dict[str, list[int]] = {"loaded": [], "loading": [], "failed": []}
    for partition in sorted(coordinator.owned or ()):
        shard = coordinator.shards.get(partition)
        state = ShardState.LOADING if shard is None else shard.state
        name = "loaded" if state is ShardState.ACTIVE else "loading" if state is ShardState.LOADING else "failed"
        states[name].append(partition)
    return states


def group_ids(shard: Shard) -> list[str]:
    """Groups with members or state, and groups that only have committed offsets (Empty, as Kafka lists them)."""
    return sorted(set(shard.groups) | set(shard.consumer_groups) | set(shard.offsets.by_group))


def iso_ms(wall_ms: int) -> str:
    return datetime.datetime.fromtimestamp(wall_ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")


class GroupViews:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.coordinator: GroupCoordinator = services.groups

    def log_end(self, topic: str, partition: int) -> int | None:
        """The high watermark of a partition hosted here, else None."""
        part = self.services.data.partition(topic, partition)
        return None if part is None else part.log.high_watermark

    def offsets(self, shard: Shard, group_id: str) -> list[dict[str, Any]]:
        out = []
        for topic, partition, value in sorted(shard.offsets.items(group_id), key=lambda t: (t[0], t[1])):
            end = self.log_end(topic, partition)
            out.append({"topic": topic, "partition": partition, "committed_offset": value.offset,
                        "log_end_offset": end, "lag": None if end is None else max(end - value.offset, 0),
                        "metadata": value.metadata})
        return out

    def summaries(self) -> list[dict[str, Any]]:
        out = []
        for shard in active_shards(self.coordinator):
            for group_id in group_ids(shard):
                group = shard.groups.get(group_id)
                consumer = shard.consumer_groups.get(group_id)
                lags = [o["lag"] for o in self.offsets(shard, group_id) if o["lag"] is not None]
                header = consumer_header(consumer) if consumer is not None else _header(group_id, group)
                members = consumer or group
                out.append({**header, "members": 0 if members is None else len(members.members),
                            "lag": sum(lags) if lags else None, "coordinator_partition": shard.partition})
            for share in list(shard.share.groups.values()):
                lags = [row["lag"] for row in share_partitions(self.services, share, self.log_end)
                        if row["lag"] is not None]
                out.append({**share_header(share), "members": len(share.members),
                            "lag": sum(lags) if lags else None, "coordinator_partition": shard.partition})
        return sorted(out, key=lambda g: g["group_id"])

    def detail(self, group_id: str) -> dict[str, Any] | None:
        """The group as the console shows it; None if this node does not know it."""
        shard = self.coordinator.shard_for(group_id)
        group = shard.groups.get(group_id)
        consumer = shard.consumer_groups.get(group_id) if shard.state is ShardState.ACTIVE else None
        share = shard.share.groups.get(group_id) if shard.state is ShardState.ACTIVE else None
        if share is not None:
            names = self.coordinator.topic_view.name_of
            return {**share_header(share), "leader": None, "coordinator_partition": shard.partition,
                    "members": [share_member(m, names) for m in share.members.values()], "offsets": [],
                    "share_partitions": share_partitions(self.services, share, self.log_end), "rebalances": []}
        if consumer is not None:
            names = self.coordinator.topic_view.name_of
            return {**consumer_header(consumer), "leader": None, "coordinator_partition": shard.partition,
                    "members": [consumer_member(m, names) for m in consumer.members.values()],
                    "offsets": self.offsets(shard, group_id), "rebalances": []}
        if shard.state is not ShardState.ACTIVE or (group is None and group_id not in shard.offsets.by_group):
            return None
        members = [] if group is None else [_member(group, m) for m in group.members.values()]
        owner = {(a["topic"], p): m["member_id"] for m in members for a in m["assignment"] for p in a["partitions"]}
        offsets = self.offsets(shard, group_id)
        for entry in offsets:
            entry["member_id"] = owner.get((entry["topic"], entry["partition"]))
        return {**_header(group_id, group), "leader": None if group is None else group.leader_id,
                "coordinator_partition": shard.partition, "members": members, "offsets": offsets,
                "rebalances": [] if group is None else rebalances(group)}

    def topics(self) -> list[dict[str, Any]]:
        out = []
        for info in sorted(self.services.topics.all(), key=lambda t: t.name):
            partitions = []
            for index in range(info.partitions):
                part = self.services.data.partition(info.name, index)
                if part is not None:
                    partitions.append({"partition": index, "log_start_offset": part.log.log_start_offset,
                                       "log_end_offset": part.log.high_watermark})
            out.append({"name": info.name, "topic_id": str(info.topic_id), "internal": info.internal,
                        "partition_count": info.partitions, "partitions": partitions})
        return out


def consumer_header(group: ConsumerGroup) -> dict[str, Any]:
    """A KIP-848 group: its group epoch stands where a classic group's generation does."""
    return {"group_id": group.group_id, "state": group.state.value, "protocol_type": group.protocol_type,
            "protocol": group.preferred_assignor() or "", "generation": group.group_epoch, "group_type": "consumer"}


def consumer_member(member: ConsumerGroupMember, name_of: Callable[[uuid.UUID], str | None]) -> dict[str, Any]:
    assignment = [{"topic": name_of(topic_id) or str(topic_id), "partitions": sorted(partitions)}
                  for topic_id, partitions in member.assigned_partitions.items()]
    return {"member_id": member.member_id, "group_instance_id": member.instance_id, "client_id": member.client_id,
            "client_host": member.client_host, "member_epoch": member.member_epoch, "state": member.state.name,
            "assignment": sorted(assignment, key=lambda a: a["topic"])}


def _header(group_id: str, group: ClassicGroup | None) -> dict[str, Any]:
    if group is None:  # offsets only: Kafka lists such a group as Empty with no protocol
        return {"group_id": group_id, "state": GroupState.EMPTY.value, "protocol_type": "", "protocol": "",
                "generation": 0}
    return {"group_id": group_id, "state": group.state.value, "protocol_type": group.protocol_type or "",
            "protocol": group.protocol_name or "", "generation": group.generation_id}


def _member(group: ClassicGroup, member: Any) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    if group.protocol_type == "consumer":  # other protocols' assignments are opaque bytes
        for topic, partition in assigned_partitions(member.assignment):
            by_topic.setdefault(topic, []).append(partition)
    assignment = [{"topic": topic, "partitions": partitions} for topic, partitions in sorted(by_topic.items())]
    return {"member_id": member.member_id, "group_instance_id": member.group_instance_id,
            "client_id": member.client_id, "client_host": member.client_host, "assignment": assignment}


def rebalances(group: ClassicGroup) -> list[dict[str, Any]]:
    """The group's finished rebalances, oldest first."""
    return [rebalance_entry(r) for r in group.rebalances]


def rebalance_entry(record: RebalanceRecord) -> dict[str, Any]:
    return {"started_at": iso_ms(record.started_wall_ms), "cause": record.cause, "detail": record.detail,
            "generation": record.generation, "members": record.members, "joined": list(record.joined),
            "left": list(record.left), "duration_ms": record.duration_ms, "outcome": record.outcome}
