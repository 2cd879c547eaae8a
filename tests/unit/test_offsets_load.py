"""Loading: replay of the written records equals live state (hypothesis), the durable log on
disk, snapshots + log, LOADING while a partition loads, timers re-armed after load."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.errors import ErrorCode

from coordinator.groups.settings import GroupSettings
from coordinator.records import log_codec
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_all
from coordinator.runtime.shard import ShardState
from coordinator.runtime.timers import FakeScheduler
from rules.placement import partition_for
from storage.records import GroupMetadataValue, MemberMetadata
from storage.snapshot import write_snapshot
from tests.support.examples import examples
from tests.support.groups import subscription
from tests.support.offsets import OffsetsHarness, commit_request, delete_request
from tests.support.offsets_log import snapshot_of

E = ErrorCode
GROUPS = ["g1", "g2", "g3"]


def reload(records: list, settings: GroupSettings) -> GroupCoordinator:
    fresh = GroupCoordinator(settings, FakeScheduler())
    for record in records:
        key, value = log_codec.encode(record)  # through the bytes, as from disk
        decoded = log_codec.decode(key, value)
        group = decoded.group if isinstance(decoded, OffsetCommitRecord) else decoded.group_id
        fresh.shard_for(group).replay(decoded)
    return fresh


op = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(["a", "b"]), st.integers(0, 2),
              st.integers(0, 10**6), st.sampled_from(["", "meta", "é😀"]), st.sampled_from([-1, 60_000])),
    st.tuples(st.just("form"), st.sampled_from(GROUPS), st.integers(1, 3), st.sampled_from(["a", "b"])),
    st.tuples(st.just("member_commit"), st.sampled_from(GROUPS), st.sampled_from(["a", "b"]), st.integers(0, 2)),
    st.tuples(st.just("leave_all"), st.sampled_from(GROUPS)),
    st.tuples(st.just("delete_offsets"), st.sampled_from(GROUPS), st.sampled_from(["a", "b"])),
    st.tuples(st.just("delete_group"), st.sampled_from(GROUPS)),
    st.tuples(st.just("expire"), st.sampled_from([1_000, 3_600_000, 8 * 24 * 3_600_000])),
)


def apply(h: OffsetsHarness, operation: tuple) -> None:
    kind, group_id = operation[0], operation[1]
    group = h.coordinator.group(group_id) if isinstance(group_id, str) else None
    if kind == "commit":
        _k, g, topic, p, offset, metadata, retention = operation
        h.commit(commit_request(2 if retention != -1 else 9, g, {(topic, p): offset}, metadata=metadata,
                                retention_ms=retention))
    elif kind == "form" and (group is None or group.state.value == "Empty"):
        _k, g, n, topic = operation
        h.stable_group(n, group_id=g, protocols=(("range", subscription([topic])),))
    elif kind == "member_commit" and group is not None and group.state.value == "Stable":
        _k, g, topic, p = operation
        h.commit(commit_request(9, g, {(topic, p): 42}, generation=group.generation_id, member=group.leader_id))
    elif kind == "leave_all" and group is not None and group.members:
        h.leave(*list(group.members), group_id=group_id)
    elif kind == "delete_offsets":
        _k, g, topic = operation
        h.send(delete_request(g, {topic: [0, 1, 2]}))
        h.log.complete()
    elif kind == "delete_group":
        coro = h.coordinator.delete_groups([group_id])
        try:
            coro.send(None)
        except StopIteration:
            pass
        h.log.complete()
        coro.close()
    elif kind == "expire":
        h.clock.advance(operation[1])
        for shard in h.coordinator.all_shards():
            shard.expire(h.clock.wall_ms(), h.settings.offsets_retention_ms)
    h.log.complete()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(op, min_size=1, max_size=25))
def test_replay_of_written_records_equals_live_state(operations):
    async def run():
        h = OffsetsHarness()
        for operation in operations:
            apply(h, operation)
        live = snapshot_of(h.coordinator)
        loaded = snapshot_of(reload(h.log.all_records(), h.settings))
        assert loaded == live

    asyncio.run(run())


async def test_durable_log_round_trip_and_concurrent_loading(tmp_path):
    settings = GroupSettings(initial_rebalance_delay_ms=0)
    durable = DurableLog(str(tmp_path))
    coordinator = GroupCoordinator(settings, FakeScheduler(), durable, owned=range(50))
    for shard in coordinator.owned_shards():
        durable.open_partition(shard.partition)
    await load_all(coordinator.owned_shards(), durable, None)
    big, small = "big-group", "small-group"
    assert partition_for(big, 50) != partition_for(small, 50)
    writes = []
    for i in range(400):
        writes.append(coordinator.shard_for(big).write(
            [OffsetCommitRecord(big, "t", p, OffsetValue(i, "x" * 50, 1000 + i)) for p in range(5)]))
        await asyncio.sleep(0)  # one write per loop turn: one batch each, so loading takes many chunks
    writes.append(coordinator.shard_for(small).write([OffsetCommitRecord(small, "t", 0, OffsetValue(7, "", 1))]))
    value = GroupMetadataValue("consumer", 3, "range", "m", (MemberMetadata(
        "m", "c", "/h", 10000, subscription(["t"]), b"asg", None, 20000),), 555)
    writes.append(coordinator.shard_for(small).write([GroupMetadataRecord(small, value)]))
    for write in writes:
        await write
    await durable.close()

    durable2 = DurableLog(str(tmp_path))
    clock = FakeScheduler()
    coordinator2 = GroupCoordinator(settings, clock, durable2, owned=range(50))
    shards = coordinator2.owned_shards()
    for shard in shards:
        durable2.open_partition(shard.partition)
    assert coordinator2.shard_for(big).error == E.coordinator_load_in_progress
    task = asyncio.ensure_future(load_all(shards, durable2, None, chunk_bytes=2048))
    for _ in range(5):
        await asyncio.sleep(0)
    # the small partition is served while the big one is still loading
    assert coordinator2.shard_for(small).state is ShardState.ACTIVE
    assert coordinator2.shard_for(big).state is ShardState.LOADING
    await task
    assert snapshot_of(coordinator2)[1][(big, "t", 3)] == (399, "x" * 50, 1399, -1, -1)
    group = coordinator2.group(small)
    assert group.state.value == "Stable" and group.members["m"].rebalance_timeout_ms == 20000
    # session timers were re-armed on load: the silent member expires, the group empties
    clock.advance(10_001)
    assert group.state.value in ("PreparingRebalance", "Empty")
    await durable2.close()


async def test_snapshot_then_log(tmp_path):
    settings = GroupSettings()
    group = "snap-group"
    p = partition_for(group, 50)
    durable = DurableLog(str(tmp_path))
    coordinator = GroupCoordinator(settings, FakeScheduler(), durable, owned=[p])
    [shard] = coordinator.owned_shards()
    durable.open_partition(p)
    await load_all([shard], durable, None)
    for i in range(3):
        await shard.write([OffsetCommitRecord(group, "t", 0, OffsetValue(i, "", 1))])
    await shard.write([OffsetCommitRecord(group, "t", 1, OffsetValue(50, "", 1))])
    await durable.close()
    from storage.records import OffsetCommitKey, OffsetCommitValue
    # covers offset 3: log records 0-2 are in it; record 3 (t-1) is replayed on top
    write_snapshot(str(tmp_path), p, [(group, None)],
                   [(OffsetCommitKey(group, "t", 0), OffsetCommitValue(2, "", 1)),
                    (OffsetCommitKey(group, "u", 0), OffsetCommitValue(9, "s", 1))], 3)
    # a snapshot that claims more than the log holds is ignored
    write_snapshot(str(tmp_path), p, [], [(OffsetCommitKey(group, "bogus", 0), OffsetCommitValue(1, "", 1))], 99,
                   created_at_ms=10**13)
    durable2 = DurableLog(str(tmp_path))
    coordinator2 = GroupCoordinator(settings, FakeScheduler(), durable2, owned=[p])
    [shard2] = coordinator2.owned_shards()
    durable2.open_partition(p)
    [stats] = await load_all([shard2], durable2, str(tmp_path))
    # two offset records (the simple group has no record of its own: its offsets make it)
    assert stats["snapshot_records"] == 2 and stats["log_records"] == 1
    _groups, offsets = snapshot_of(coordinator2)
    assert {k: v[0] for k, v in offsets.items()} == {(group, "t", 0): 2, (group, "u", 0): 9, (group, "t", 1): 50}
    await durable2.close()


async def test_loaded_shard_is_not_coordinator_for_foreign_partitions(tmp_path):
    durable = DurableLog(str(tmp_path))
    coordinator = GroupCoordinator(GroupSettings(), FakeScheduler(), durable, owned=[0])
    assert coordinator.shard_for("x").error in (E.not_coordinator, E.coordinator_load_in_progress)
    other = next(g for g in (f"g{i}" for i in range(100)) if partition_for(g, 50) != 0)
    assert coordinator.shard_for(other).error == E.not_coordinator
