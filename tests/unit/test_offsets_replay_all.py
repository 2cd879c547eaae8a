"""Shard.replay_all / OffsetStore.apply_all: a batch gives the state one record at a time gives."""

from __future__ import annotations

import random

from coordinator.groups.settings import GroupSettings
from coordinator.offsets.store import OffsetStore, durable_value
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog


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


def test_a_live_apply_remembers_what_each_record_replaced_and_a_failed_write_takes_it_back():
    for seed in range(20):
        store = OffsetStore()
        before = [r for r in random_records(seed) if type(r) is OffsetCommitRecord]
        store.apply_all(before)
        expected = {(g, t, p): store.get(g, t, p) for g, t, p, _v in before}
        write = [r for r in random_records(seed + 100) if type(r) is OffsetCommitRecord]
        undo: list = []
        store.apply_all(write, undo)
        assert len(undo) == len(write)
        replay = OffsetStore()
        replay.apply_all(before)
        for record, raw in zip(write, undo):  # each undo value is what the key held just before
            assert durable_value(raw) == replay.get(*record[:3]), seed
            replay.apply_all([record])
        token = object()
        store.begin(token, write, undo)
        for group in "ab":  # the durable view: each changed key's value from before the write
            assert {(group, t, p): durable_value(raw) for (t, p), raw in store.durable_view(group).items()} == {
                (g, t, p): expected.get((g, t, p)) for g, t, p, _v in write if g == group}
        assert sorted(store.items("a")) == sorted(replay.items("a"))
        store.end(token, RuntimeError("disk gone"))
        assert not store.inflight
        assert {key: store.get(*key) for key in expected} == expected
        assert all(store.get(*r[:3]) is None for r in write if r[:3] not in expected)


def test_a_failed_write_leaves_a_later_writes_keys_live_and_hands_it_the_durable_value():
    store = OffsetStore()
    v = [OffsetValue(i, "", i, -1, -1) for i in range(4)]
    store.apply("g", "t", 0, v[0])
    first, second = object(), object()
    for token, records in ((first, [OffsetCommitRecord("g", "t", 0, v[1]), OffsetCommitRecord("g", "t", 1, v[1])]),
                           (second, [OffsetCommitRecord("g", "t", 0, v[2])])):
        undo: list = []
        store.apply_all(records, undo)
        store.begin(token, records, undo)
    store.end(first, OSError("disk gone"))
    assert store.get("g", "t", 0) == v[2] and store.get("g", "t", 1) is None  # the later write's value stays live
    assert {k: durable_value(raw) for k, raw in store.durable_view("g").items()} == {("t", 0): v[0]}
    store.end(second, OSError("disk gone"))
    assert store.get("g", "t", 0) == v[0] and not store.inflight
    store.end(second, None)  # settled already: nothing happens
    assert store.get("g", "t", 0) == v[0]


def test_a_write_settles_its_bookkeeping_before_its_callbacks_run():
    c = coordinator()
    shard = c.shard_for("a")
    write = shard.write([OffsetCommitRecord("a", "x", 0, OffsetValue(1, "", 1, -1, -1))])
    assert shard.offsets.durable_view("a") == {("x", 0): None} and list(shard.offsets.inflight) == [write]
    seen = []
    write.add_callback(lambda error: seen.append((error, dict(shard.offsets.inflight))))
    c.record_log.complete()
    assert seen == [(None, {})]
    write.resolve(RuntimeError("late"))  # a second resolve changes nothing
    assert shard.offsets.get("a", "x", 0) == OffsetValue(1, "", 1, -1, -1)
