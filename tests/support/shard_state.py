"""What clients can see of a shard, as plain comparable values: for comparing a live shard with one loaded from
the records that are durable (the rule of runtime/journal.py: after any failure the state is a replay of them),
and with itself before a failed write."""

from __future__ import annotations

import os
from typing import Any

from coordinator.groups.classic_group import GroupState
from coordinator.groups.settings import GroupSettings
from coordinator.offsets.manager import fetch
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_shard
from coordinator.runtime.shard import Shard, ShardState
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import PendingWrite


def group_ids(shard: Shard) -> set[str]:
    pending = {key[0] for _pid, key, _entry in shard.offsets.txn.entries()}
    return set(shard.groups) | set(shard.consumer_groups) | set(shard.offsets.by_group) | pending


def offsets(shard: Shard, ids: set[str]) -> dict[str, tuple]:
    """OffsetFetch of every topic, plain and require_stable, per group."""
    out = {}
    for group_id in sorted(ids):
        answers = []
        for stable in (False, True):
            answers.append(sorted((topic, sorted(rows)) for topic, rows in fetch(shard, group_id, None, stable)))
        out[group_id] = tuple(answers)
    return out


def pending_offsets(shard: Shard) -> tuple:
    """The pending transactional offsets: per producer and key, the value and whether a COMMIT would skip it;
    the groups with open transactions; the epochs of the producers that have pending offsets."""
    txn = shard.offsets.txn
    entries = sorted((pid, key, entry.value, entry.stale) for pid, key, entry in txn.entries())
    producers = {pid for pid, *_rest in entries}
    return (entries, sorted((str(g), sorted(pids)) for g, pids in txn.by_group.items() if pids),
            sorted((pid, epoch) for pid, epoch in txn.epochs.items() if pid in producers))


def consumer_groups(shard: Shard) -> dict[str, tuple]:
    out = {}
    for group_id, group in sorted(shard.consumer_groups.items()):
        out[group_id] = (group.group_epoch, group.assignment_epoch, group.state, dict(group.members),
                         dict(group.target_assignment), dict(group.subscription_metadata), dict(group.static_members),
                         +group.subscribed_topic_names, group.classic_members)
    return out


def classic_groups(shard: Shard) -> dict[str, tuple]:
    """DescribeGroups of the classic groups (not Dead), with the members' assignments."""
    out = {}
    for group_id, group in sorted(shard.groups.items()):
        if group.state is GroupState.DEAD:
            continue
        members = sorted((m.member_id, m.group_instance_id, m.assignment) for m in group.members.values())
        out[group_id] = (group.state, group.protocol_type, group.protocol_name, group.generation_id,
                         group.leader_id, members)
    return out


def observable(shard: Shard) -> dict[str, Any]:
    ids = group_ids(shard)
    return {"offsets": offsets(shard, ids), "pending": pending_offsets(shard), "consumer": consumer_groups(shard),
            "classic": classic_groups(shard)}


async def reload(durable: DurableLog, partition: int, settings: GroupSettings, topics: Any = None) -> Shard:
    """A fresh shard of `partition` loaded (runtime/loader.py) from the log `durable` has for it."""
    coordinator = GroupCoordinator(settings, FakeScheduler(), durable, owned=[partition])
    if topics is not None:
        coordinator.topic_view = topics
    [shard] = coordinator.owned_shards()
    await load_shard(shard, durable, None)
    assert shard.state is ShardState.ACTIVE
    return shard


async def load_writes(root: str, partition: int, writes: list[PendingWrite], settings: GroupSettings,
                      topics: Any = None) -> Shard:
    """A fresh shard loaded from a new log (under `root`) holding exactly `writes`' records, as DurableLog writes
    them (each write's batch: plain, transactional or a marker)."""
    os.makedirs(root, exist_ok=True)
    durable = DurableLog(root, fsync=lambda fd: None)
    durable.open_partition(partition)
    for write in writes:
        durable.append(partition, PendingWrite(write.records, None, producer=write.producer, marker=write.marker))
    await durable.flush()
    shard = await reload(durable, partition, settings, topics)
    await durable.close()
    return shard
