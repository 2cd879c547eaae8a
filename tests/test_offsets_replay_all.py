"""Shard.replay_all / OffsetStore.apply_all: a batch gives the state one record at a time gives."""

from __future__ import annotations

import random

from coordinator.offset_store import OffsetStore, durable_value
from coordinator.records import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from coordinator.shard import GroupCoordinator, GroupSettings, MemoryLog
from coordinator.timers import FakeScheduler


def random_records(seed: int, n: int = 400) -> list:
    """Commits and tombstones over few keys (runs of one (group, topic), partitions far
    past a dense list's end, negative ones), with group tombstones between."""
    rng = random.Random(seed)
    out: list = []
    for i in range(n):
        if rng.random() < 0.03:
            out.append(GroupMetadataRecord(rng.choice("ab"), None))
            continue
        group, topic = rng.choice("ab"), rng.choice("xy")
        for _ in range(rng.randint(1, 6)):  # a run of one (group, topic), as a write makes
            partition = rng.choice((0, 1, 2, 3, 5, 40, 1000, -1))
            value = None if rng.random() < 0.25 else OffsetValue(i, rng.choice(("", "m")), i, -1, -1)
            out.append(OffsetCommitRecord(group, topic, partition, value))
    return out


def state(coordinator: GroupCoordinator) -> tuple:
    shard = coordinator.shard_for("a")
    assert coordinator.shard_for("b") is shard
    offsets = sorted((g, t, p, v) for g in "ab" for t, p, v in shard.offsets.items(g))
    return offsets, sorted(shard.groups)


def coordinator() -> GroupCoordinator:
    return GroupCoordinator(GroupSettings(offsets_partitions=1), FakeScheduler(), MemoryLog(auto=False))


def test_replay_all_equals_one_record_at_a_time():
    for seed in range(20):
        records = random_records(seed)
        one, batch = coordinator(), coordinator()
        for record in records:
            one.shard_for("a").replay(record)
        batch.shard_for("a").replay_all(records)
        assert state(batch) == state(one), seed


def test_tracked_apply_remembers_each_keys_value_from_before_the_write():
    for seed in range(20):
        rng = random.Random(seed)
        store = OffsetStore()
        before = [r for r in random_records(seed) if type(r) is OffsetCommitRecord]
        store.apply_all(before)
        expected = {(g, t, p): store.get(g, t, p) for g, t, p, _v in before}
        write = [r for r in random_records(seed + 100) if type(r) is OffsetCommitRecord]
        store.apply_all(write, track=True)
        counts: dict = {}
        for g, t, p, _v in write:
            counts[g, t, p] = counts.get((g, t, p), 0) + 1
        assert {(g, t, p) for (g, t), tracked in store.pending.items() for p in tracked} == set(counts)
        for key, count in counts.items():
            entry = store.pending_entry(*key)
            assert entry is not None and entry[0] == count
            assert durable_value(entry) == expected.get(key), (seed, key)
        reference = OffsetStore()
        reference.apply_all(before + write)
        assert sorted(store.items("a")) == sorted(reference.items("a"))
        store.end(write, RuntimeError("disk gone"))
        assert not store.pending
        assert {key: store.get(*key) for key in expected} == expected
        assert all(store.get(*key) is None for key in counts if key not in expected)


def test_a_write_settles_its_bookkeeping_before_its_callbacks_run():
    c = coordinator()
    shard = c.shard_for("a")
    write = shard.write([OffsetCommitRecord("a", "x", 0, OffsetValue(1, "", 1, -1, -1))])
    assert shard.offsets.pending_entry("a", "x", 0) is not None and shard.inflight == {write}
    seen = []
    write.add_callback(lambda error: seen.append((error, dict(shard.offsets.pending), set(shard.inflight))))
    c.record_log.complete()
    assert seen == [(None, {}, set())]
    write.resolve(RuntimeError("late"))  # a second resolve changes nothing
    assert shard.offsets.get("a", "x", 0) == OffsetValue(1, "", 1, -1, -1)
