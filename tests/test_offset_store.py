"""OffsetStore holds offsets packed: what goes in comes out, at the edges of each field's range."""

from __future__ import annotations

from coordinator.offsets import OffsetStore, commit_records
from coordinator.records import OffsetValue
from tests.offsets_support import commit_request

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
    assert store.has_offsets("g")
    store.apply("g", "t", 1, None)
    store.apply("g", "t", 7, None)  # deleting what is not there changes nothing
    assert not store.has_offsets("g") and store.by_group == {}


def test_retention_beyond_int64_is_clamped():
    request = commit_request(2, "g", {("t", 0): 7})
    topics = request.topics
    [record], _answer = commit_records("g", topics, now_ms=10, retention_ms=I64_MAX, max_metadata=4096,
                                       with_epoch=False)
    assert record.value.expire_timestamp == I64_MAX
    [record], _answer = commit_records("g", topics, now_ms=-10, retention_ms=I64_MIN, max_metadata=4096,
                                       with_epoch=False)
    assert record.value.expire_timestamp == I64_MIN
    store = OffsetStore()
    store.apply("g", "t", 0, record.value)
    assert store.get("g", "t", 0) == record.value


async def test_fetch_reads_the_durable_value_across_overlapping_writes():
    from tests.offsets_support import OffsetsHarness, fetch_request, fetched

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
    assert not h.coordinator.shard_for("g").offsets.pending
