"""Shard.replay_all / OffsetStore.apply_all: a batch gives the state one record at a time gives."""

from __future__ import annotations

import random

from kio.schema.errors import ErrorCode

from coordinator.errors import EarlierWriteFailed, commit_error_code, write_error_code
from coordinator.groups.settings import GroupSettings
from coordinator.offsets.store import OffsetStore, durable_value
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.journal import Journal
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog, PendingWrite
from storage.errors import RecordTooLargeError


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
        journal = Journal(write)
        store.apply_all(write, journal.offsets)
        assert len(journal.offsets) == len(write)
        replay = OffsetStore()
        replay.apply_all(before)
        for record, raw in zip(write, journal.offsets):  # each value is what the key held just before
            assert durable_value(raw) == replay.get(*record[:3]), seed
            replay.apply_all([record])
        pending = PendingWrite(write)
        store.inflight.add(pending, journal)
        for group in "ab":  # the durable view: each changed key's value from before the write
            assert {(group, t, p): durable_value(raw) for (t, p), raw in store.durable_view(group).items()} == {
                (g, t, p): expected.get((g, t, p)) for g, t, p, _v in write if g == group}
        assert sorted(store.items("a")) == sorted(replay.items("a"))
        pending.resolve(RuntimeError("disk gone"))
        assert not store.inflight
        assert {key: store.get(*key) for key in expected} == expected
        assert all(store.get(*r[:3]) is None for r in write if r[:3] not in expected)


def in_flight(store: OffsetStore, records: list) -> PendingWrite:
    journal = Journal(records)
    store.apply_all(records, journal.offsets)
    pending = PendingWrite(records)
    store.inflight.add(pending, journal)
    return pending


def test_a_failed_write_takes_the_later_writes_in_flight_back_with_it():
    """The log lost them too (a failed flush fails every later append): their keys go back to the durable value,
    newest first, and they fail with the same error once the failed write's waiters have run."""
    store = OffsetStore()
    v = [OffsetValue(i, "", i, -1, -1) for i in range(4)]
    store.apply("g", "t", 0, v[0])
    first = in_flight(store, [OffsetCommitRecord("g", "t", 0, v[1]), OffsetCommitRecord("g", "t", 1, v[1])])
    second = in_flight(store, [OffsetCommitRecord("g", "t", 0, v[2]), OffsetCommitRecord("g", "t", 0, None)])
    assert {k: durable_value(raw) for k, raw in store.durable_view("g").items()} == {("t", 0): v[0], ("t", 1): None}
    seen = []
    first.add_callback(lambda error: seen.append(("first", error, second.done(), store.get("g", "t", 0))))
    second.add_callback(lambda error: seen.append(("second", error, first.done(), store.get("g", "t", 0))))
    error = OSError("disk gone")
    first.resolve(error)
    assert seen == [("first", error, False, v[0]), ("second", error, True, v[0])]
    assert store.get("g", "t", 1) is None and not store.inflight and store.durable_view("g") == {}
    second.resolve(None)  # settled already: nothing happens
    assert store.get("g", "t", 0) == v[0]


def test_a_write_refused_alone_fails_the_later_ones_with_a_retriable_error():
    store = OffsetStore()
    value = OffsetValue(1, "", 1, -1, -1)
    earlier, refused, later = (in_flight(store, [OffsetCommitRecord("g", "t", p, value)]) for p in range(3))
    refused.refuse(RecordTooLargeError("too big"))
    assert isinstance(refused.exception(), RecordTooLargeError)
    assert isinstance(later.exception(), EarlierWriteFailed)
    assert write_error_code(later.exception()) is ErrorCode.coordinator_not_available
    assert commit_error_code(later.exception()) is ErrorCode.coordinator_not_available
    assert not earlier.done() and [p for p in range(3) if store.get("g", "t", p)] == [0]
    earlier.resolve()
    assert store.get("g", "t", 0) == value and not store.inflight


def test_a_write_settles_its_bookkeeping_before_its_callbacks_run():
    c = coordinator()
    shard = c.shard_for("a")
    write = shard.write([OffsetCommitRecord("a", "x", 0, OffsetValue(1, "", 1, -1, -1))])
    assert shard.offsets.durable_view("a") == {("x", 0): None} and shard.inflight.writes() == [write]
    seen = []
    write.add_callback(lambda error: seen.append((error, shard.inflight.writes())))
    c.record_log.complete()
    assert seen == [(None, [])]
    write.resolve(RuntimeError("late"))  # a second resolve changes nothing
    assert shard.offsets.get("a", "x", 0) == OffsetValue(1, "", 1, -1, -1)
