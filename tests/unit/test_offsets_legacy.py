"""OffsetCommit v0/v1 and OffsetFetch v0 semantics through the real handlers, on the fake
clock with a MemoryLog the test completes (see tests/unit/test_offsets.py for v2+)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.handlers.offset_commit import with_commit_timestamps
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime.shard import ShardState
from protocol import legacy_messages as m
from tests.support.legacy_offsets import commit_v0, commit_v1, fetch_v0
from tests.support.offsets import OffsetsHarness, codes, commit_request, fetch_request, fetched

E = ErrorCode
pytestmark = pytest.mark.asyncio


async def test_v0_commit_is_outside_group_management_and_fetched_by_every_version():
    h = OffsetsHarness()
    h.clock.advance(5000)
    response = h.commit(commit_v0("g", {("t", 0): 5, ("t", 1): 6}, metadata="old"))
    assert type(response) is m.OffsetCommitResponseV0  # no throttle time
    assert codes(response) == {("t", 0): E.none, ("t", 1): E.none}
    group = h.group("g")
    assert group.state.value == "Empty" and group.protocol_type is None  # a "simple" group
    now = h.clock.wall_ms()
    assert h.log.all_records() == [OffsetCommitRecord("g", "t", 0, OffsetValue(5, "old", now, -1, -1)),
                                   OffsetCommitRecord("g", "t", 1, OffsetValue(6, "old", now, -1, -1))]
    v0 = h.send(fetch_v0("g", {"t": [0, 1, 2]}))
    assert type(v0) is m.OffsetFetchResponseV0
    expected = {("t", 0): (5, None, "old", E.none), ("t", 1): (6, None, "old", E.none),
                ("t", 2): (-1, None, "", E.none)}
    assert fetched(v0.topics) == expected
    assert fetched(h.send(fetch_request(1, "g", {"t": [0, 1, 2]})).topics) == expected
    assert fetched(h.send(fetch_request(8, "g", {"t": [0]})).groups[0].topics)[("t", 0)] == (5, -1, "old", E.none)


async def test_v1_commit_timestamp_lands_in_the_record_and_minus_one_means_now():
    h = OffsetsHarness()
    h.clock.advance(7000)
    response = h.commit(commit_v1("g", {("t", 0): (10, 1_600_000_000_000), ("t", 1): 11}))
    assert type(response) is m.OffsetCommitResponseV1
    assert codes(response) == {("t", 0): E.none, ("t", 1): E.none}
    now = h.clock.wall_ms()
    assert [r.value for r in h.log.all_records()] == [OffsetValue(10, "", 1_600_000_000_000, -1, -1),
                                                      OffsetValue(11, "", now, -1, -1)]  # default retention
    assert fetched(h.send(fetch_v0("g", {"t": [0, 1]})).topics) == {("t", 0): (10, None, "", E.none),
                                                                     ("t", 1): (11, None, "", E.none)}


async def test_v1_validates_member_and_generation_like_v2_and_v0_like_generation_minus_one():
    h = OffsetsHarness()
    leader, _follower = h.stable_group(2)
    gen = h.group().generation_id
    h.log.complete()
    before = len(h.log.all_records())
    v1 = lambda **kw: codes(h.commit(commit_v1("g", {("t", 0): 1}, **kw)))[("t", 0)]  # noqa: E731
    v2 = lambda **kw: codes(h.commit(commit_request(2, "g", {("t", 0): 1}, **kw)))[("t", 0)]  # noqa: E731
    for kw, expected in [({"generation": gen + 1, "member": leader}, E.illegal_generation),
                         ({"generation": gen, "member": "stranger"}, E.unknown_member_id),
                         ({}, E.unknown_member_id)]:  # generation -1 on a non-empty group
        assert v1(**kw) == v2(**kw) == expected
    assert codes(h.commit(commit_v0("g", {("t", 0): 1}))) == {("t", 0): E.unknown_member_id}
    assert len(h.log.all_records()) == before  # nothing written by a refused commit
    assert v1(generation=gen, member=leader) == E.none
    assert h.log.all_records()[-1].value.offset == 1


async def test_v1_to_an_unknown_group_with_a_generation_is_illegal_generation():
    h = OffsetsHarness()
    response = h.commit(commit_v1("nobody", {("t", 0): 1}, generation=3, member="m"))
    assert codes(response) == {("t", 0): E.illegal_generation}
    assert h.log.all_records() == []


async def test_coordinator_errors_go_on_every_partition_of_v0_and_v1():
    h = OffsetsHarness()
    shard = h.coordinator.shard_for("g")
    shard.set_state(ShardState.LOADING)
    every = {("t", 0): E.coordinator_load_in_progress, ("u", 2): E.coordinator_load_in_progress}
    assert codes(h.commit(commit_v0("g", {("t", 0): 1, ("u", 2): 1}))) == every
    assert codes(h.commit(commit_v1("g", {("t", 0): 1, ("u", 2): 1}))) == every
    assert fetched(h.send(fetch_v0("g", {"t": [0], "u": [2]})).topics) == {
        ("t", 0): (-1, None, "", E.coordinator_load_in_progress),
        ("u", 2): (-1, None, "", E.coordinator_load_in_progress)}
    shard.set_state(ShardState.ACTIVE)
    invalid = {("t", 0): E.invalid_group_id}
    assert codes(h.commit(commit_v0("", {("t", 0): 1}))) == codes(h.commit(commit_v1("", {("t", 0): 1}))) == invalid
    assert fetched(h.send(fetch_v0("", {"t": [0]})).topics) == {("t", 0): (-1, None, "", E.invalid_group_id)}


async def test_v0_metadata_limit_and_deferred_answer_until_durable():
    h = OffsetsHarness()
    h.coordinator.settings.offset_metadata_max_bytes = 4
    out = h.commit(commit_v0("g", {("t", 0): 1, ("t", 1): 2}, metadata="abcd"), complete=False)
    assert not out.future.done()
    h.log.complete()
    assert codes(h.answer(commit_v0("g", {}), out)) == {("t", 0): E.none, ("t", 1): E.none}
    big = h.commit(commit_v1("g", {("t", 2): 3}, metadata="abcde"))
    assert codes(big) == {("t", 2): E.offset_metadata_too_large}


async def test_with_commit_timestamps_only_touches_stamped_partitions():
    request = commit_v1("g", {("t", 0): (1, 99), ("t", 1): 2, ("u", 0): (3, 0)})
    records = [OffsetCommitRecord("g", t, p, OffsetValue(o, "", 500, -1, -1))
               for t, p, o in (("t", 0, 1), ("t", 1, 2), ("u", 0, 3))]
    stamped = with_commit_timestamps(records, request.topics)
    assert [r.value.commit_timestamp for r in stamped] == [99, 500, 0]
    assert with_commit_timestamps(records, commit_v1("g", {("t", 0): 1}).topics) == records
