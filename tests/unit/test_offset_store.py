"""OffsetStore holds offsets packed: what goes in comes out, at the edges of each field's range."""

from __future__ import annotations

import pytest

from coordinator.offsets.manager import commit_records
from coordinator.offsets.store import OffsetStore
from coordinator.records.types import OffsetValue
from tests.support.offsets import commit_request

I64_MAX, I64_MIN = 2**63 - 1, -(2**63)


def test_values_round_trip_through_the_packed_form():
    store = OffsetStore()
    values = {
        0: OffsetValue(5, "", 1_700_000_000_000),
        1: OffsetValue(I64_MAX, "päck\U0001F600" * 100, I64_MIN, 2**31 - 1, I64_MAX),
        2: OffsetValue(-1, "m", 0, -(2**31), 12),
    }
    for partition, value in values.items():
        store.apply("g", "t", partition, value)
    assert {p: store.get("g", "t", p) for p in values} == values
    assert sorted(store.items("g")) == sorted(("t", p, v) for p, v in values.items())
    assert store.get("g", "t", 3) is None and store.get("g", "u", 0) is None and store.get("h", "t", 0) is None
    assert store.count() == 3


def test_tombstones_remove_empty_topics_and_groups():
    store = OffsetStore()
    store.apply("g", "t", 0, OffsetValue(1, "", 1))
    store.apply("g", "t", 1, OffsetValue(2, "", 1))
    store.apply("g", "t", 0, None)
    assert "g" in store.by_group
    store.apply("g", "t", 1, None)
    store.apply("g", "t", 7, None)  # deleting what is not there changes nothing
    assert "g" not in store.by_group and store.by_group == {}


def test_retention_beyond_int64_is_clamped():
    request = commit_request(2, "g", {("t", 0): 7})
    topics = request.topics
    [record], _answer, _tails = commit_records("g", topics, now_ms=10, retention_ms=I64_MAX, max_metadata=4096,
                                       with_epoch=False)
    assert record.value.expire_timestamp == I64_MAX
    [record], _answer, _tails = commit_records("g", topics, now_ms=-10, retention_ms=I64_MIN, max_metadata=4096,
                                       with_epoch=False)
    assert record.value.expire_timestamp == I64_MIN
    store = OffsetStore()
    store.apply("g", "t", 0, record.value)
    assert store.get("g", "t", 0) == record.value


async def test_fetch_reads_the_durable_value_across_overlapping_writes():
    from tests.support.offsets import OffsetsHarness, fetch_request, fetched

    h = OffsetsHarness()

    def offset() -> int:
        return fetched(h.send(fetch_request(7, "g", {"t": [0]})).topics)[("t", 0)][0]

    h.commit(commit_request(9, "g", {("t", 0): 1}))
    h.send(commit_request(9, "g", {("t", 0): 2}))
    h.send(commit_request(9, "g", {("t", 0): 3}))
    assert offset() == 1  # durable value held packed while both writes are in flight
    second, third = h.log.pending
    second.resolve()
    assert offset() == 2  # the second write's record is now the durable value
    third.resolve(OSError("disk gone"))
    assert offset() == 2 and h.coordinator.shard_for("g").offsets.get("g", "t", 0).offset == 2
    assert not h.coordinator.shard_for("g").offsets.inflight


@pytest.mark.parametrize("partitions", [
    [0, 1, 2, 3],  # dense: a list
    [3, 2, 1, 0],  # dense, committed from the top
    [0, 1, 5000],  # one far beyond the end: becomes a dict
    [-1, 0, 2],  # negative (not a Kafka partition, but the wire allows it): a dict
    [0, 40, 7],  # past the list's slack at once: a dict
])
def test_dense_and_sparse_partitions_behave_alike(partitions):
    store = OffsetStore()
    for i, p in enumerate(partitions):
        store.apply("g", "t", p, OffsetValue(100 + i, f"m{i}", i))
    assert sorted((p, v.offset) for _t, p, v in store.items("g")) == sorted(
        (p, 100 + i) for i, p in enumerate(partitions))
    assert store.count() == len(partitions)
    assert store.get("g", "t", 4999) is None and store.get("g", "t", -7) is None
    for i, p in enumerate(partitions):
        assert store.get("g", "t", p) == OffsetValue(100 + i, f"m{i}", i)
        store.apply("g", "t", p, None)
        assert store.get("g", "t", p) is None
        assert store.count() == len(partitions) - i - 1
    assert store.by_group == {}


def test_a_dense_topic_keeps_a_small_list():
    store = OffsetStore()
    for p in range(100):
        store.apply("g", "t", p, OffsetValue(p, "", 1))
    assert type(store.by_group["g"]["t"]) is list and len(store.by_group["g"]["t"]) == 100
    store.apply("g", "t", 99, None)
    store.apply("g", "t", 98, None)
    assert len(store.by_group["g"]["t"]) == 98  # tombstones at the end shrink it
    store.apply("g", "t", 50, None)
    assert store.get("g", "t", 51).offset == 51 and store.count() == 97
