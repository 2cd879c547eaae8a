"""Helpers for tests of the offsets' durable side: commit records to write, the batches a
partition's log holds, and the durable view a reload must reproduce."""

from __future__ import annotations

from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from storage.batch import decode_records, iter_batches


def commits(group: str, first: int, count: int) -> list:
    return [OffsetCommitRecord(group, "t", p, OffsetValue(first + p, "", 1)) for p in range(count)]


def batches_of(durable: DurableLog, partition: int) -> list[list[int]]:
    """Each batch's offsets in the partition's log."""
    data = durable.logs[partition].read(0, 1 << 24)
    return [[r.offset for r in decode_records(b)] for b in iter_batches(data)]


def snapshot_of(coordinator: GroupCoordinator) -> tuple[dict, dict]:
    """The durable view of every group and offset (what a reload must reproduce)."""
    groups, offsets = {}, {}
    for shard in coordinator.all_shards():
        for gid, g in shard.groups.items():
            simple = g.protocol_type is None and not g.members
            groups[gid] = (g.state.value, g.generation_id, g.protocol_type, g.protocol_name,
                           g.leader_id if g.members else None,
                           tuple(sorted((m.member_id, m.group_instance_id, m.assignment,
                                         m.metadata(g.protocol_name) if g.protocol_name else b"")
                                        for m in g.members.values())),
                           None if simple or g.members else g.state_timestamp)
        for gid in shard.offsets.by_group:
            for topic, p, v in shard.offsets.items(gid):
                offsets[(gid, topic, p)] = tuple(v)
    return groups, offsets
