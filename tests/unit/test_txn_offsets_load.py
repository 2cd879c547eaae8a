"""Transactional offsets through the real DurableLog on disk and the loader: a restart gives the live state
(committed offsets, pending ones per producer and whether a later COMMIT would materialize them), with markers
and without; the log holds Kafka's transactional batches and control batches."""

from __future__ import annotations

import random

from coordinator.groups.settings import GroupSettings
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_all
from coordinator.runtime.timers import FakeScheduler
from storage.batch import iter_batches
from storage.control_records import read_marker

GROUPS = ("g1", "g2")
PRODUCERS = (11, 12, 13)


def settings() -> GroupSettings:
    return GroupSettings(offsets_partitions=1, initial_rebalance_delay_ms=0)


async def open_coordinator(root: str) -> tuple[GroupCoordinator, DurableLog]:
    durable = DurableLog(root)
    coordinator = GroupCoordinator(settings(), FakeScheduler(), durable, owned=range(1))
    for shard in coordinator.owned_shards():
        durable.open_partition(shard.partition)
    await load_all(coordinator.owned_shards(), durable, None, chunk_bytes=512)
    return coordinator, durable


def state(coordinator: GroupCoordinator) -> tuple:
    shard = coordinator.shard_for(GROUPS[0])
    store = shard.offsets
    committed = sorted((g, t, p, v) for g in store.by_group for t, p, v in store.items(g))
    pending = sorted((pid, key, entry.value, entry.stale) for pid, key, entry in store.txn.entries())
    open_groups = sorted((g, sorted(pids)) for g, pids in store.txn.by_group.items())
    return committed, pending, open_groups, sorted(shard.groups)


def rec(group: str, partition: int, offset: int | None) -> OffsetCommitRecord:
    return OffsetCommitRecord(group, "t", partition, None if offset is None else OffsetValue(offset, "m", 5, -1, -1))


async def random_ops(coordinator: GroupCoordinator, rng: random.Random, n: int) -> None:
    shard = coordinator.shard_for(GROUPS[0])
    for i in range(n):
        group, partition = rng.choice(GROUPS), rng.randrange(3)
        roll = rng.random()
        writes = []
        if roll < 0.4:
            pid = rng.choice(PRODUCERS)
            writes.append(shard.txn.write(pid, 0, [rec(group, partition, i), rec(group, (partition + 1) % 3, i)]))
        elif roll < 0.6:
            writes.append(shard.write([rec(group, partition, 1000 + i)]))
        elif roll < 0.67:
            writes.append(shard.write([rec(group, partition, None)]))
        elif roll < 0.7:
            _answers, write = shard.delete_groups([group])
            if write is not None:
                writes.append(write)
        else:
            pid = rng.choice(PRODUCERS)
            writes.append(shard.txn.complete(pid, 0, rng.random() < 0.6, 0))
            if rng.random() < 0.3:  # a write in the same loop turn, after the marker in the log
                writes.append(shard.write([rec(group, partition, 2000 + i)]))
        for write in writes:
            await write


async def test_restart_gives_the_live_state_with_and_without_markers(tmp_path):
    for seed in range(12):
        root = str(tmp_path / str(seed))
        live, durable = await open_coordinator(root)
        rng = random.Random(seed)
        await random_ops(live, rng, 60)
        expected = state(live)
        await durable.close()
        loaded, durable2 = await open_coordinator(root)
        assert state(loaded) == expected, seed
        # the markers still to come end both alike (stale flags and log order survived the restart)
        for coordinator in (live, loaded):
            shard = coordinator.shard_for(GROUPS[0])
            for pid in PRODUCERS:
                shard.txn.replay_marker(pid, True, shard.offsets.txn.next_seq())
        assert state(loaded) == state(live), seed
        await durable2.close()


async def test_restart_mid_transaction_keeps_it_pending_then_the_marker_commits(tmp_path):
    root = str(tmp_path)
    live, durable = await open_coordinator(root)
    shard = live.shard_for("g1")
    await shard.write([rec("g1", 0, 3)])
    await shard.txn.write(11, 2, [rec("g1", 0, 7), rec("g1", 1, 8)])
    await shard.txn.write(12, 0, [rec("g1", 2, 9)])
    await shard.txn.complete(12, 0, False, 0)
    await durable.close()
    loaded, durable2 = await open_coordinator(root)
    store = loaded.shard_for("g1").offsets
    assert store.get("g1", "t", 0).offset == 3 and store.get("g1", "t", 1) is None and store.get("g1", "t", 2) is None
    assert store.txn.has("g1", "t", 0) and store.txn.has("g1", "t", 1) and not store.txn.has("g1", "t", 2)
    assert store.txn.epochs == {11: 2}
    await loaded.complete_transaction(0, 11, 2, True, 0)
    assert (store.get("g1", "t", 0).offset, store.get("g1", "t", 1).offset) == (7, 8)
    await durable2.close()
    loaded2, durable3 = await open_coordinator(root)  # the marker is in the log now
    store = loaded2.shard_for("g1").offsets
    assert (store.get("g1", "t", 0).offset, store.get("g1", "t", 1).offset) == (7, 8)
    assert len(store.txn) == 0
    batches = list(iter_batches(durable3.logs[0].read(0, 1 << 24)))
    await durable3.close()
    txn = [b for b in batches if b.is_transactional and not b.is_control]
    markers = [read_marker(b) for b in batches if b.is_control]
    assert [(b.producer_id, b.producer_epoch, b.base_sequence) for b in txn] == [(11, 2, 0), (12, 0, 0)]
    assert [(m.producer_id, m.producer_epoch, m.commit) for m in markers] == [(12, 0, False), (11, 2, True)]


def test_compaction_keeps_every_transaction_marker():
    from storage.batch import assign_offsets
    from storage.cleaner import clean_segment
    from storage.control_records import build_marker_batch

    data = b""
    for offset, producer_id in enumerate((11, 12)):
        batch = bytearray(build_marker_batch(producer_id, 0, True, 0, 1))
        assign_offsets(batch, offset)
        data += bytes(batch)
    cleaned = clean_segment(data, lambda offset: offset == 1, now_ms=10, delete_retention_ms=0, upper_bound=2)
    assert [read_marker(b).producer_id for b in iter_batches(cleaned.data)] == [11, 12]
