"""OffsetCommit / OffsetFetch / OffsetDelete semantics through the real handlers, on the
fake clock with a MemoryLog the test completes (so "pending" is observable)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.net.dispatch import Deferred
from coordinator.offsets.manager import java_length
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from coordinator.runtime.shard import ShardState
from storage.errors import RecordTooLargeError, StorageError
from tests.support.groups import subscription
from tests.support.offsets import OffsetsHarness, codes, commit_request, delete_request, fetch_request, fetched

E = ErrorCode
pytestmark = pytest.mark.asyncio


async def test_commit_outside_group_creates_simple_group_and_is_fetched_after_durable():
    h = OffsetsHarness()
    out = h.commit(commit_request(9, "g", {("t", 0): 5, ("t", 1): 6}, epoch=3, metadata="meta"), complete=False)
    assert isinstance(out, Deferred) and not out.future.done()  # answered only when durable
    # a plain fetch sees durable state (nothing yet); require_stable says UNSTABLE
    plain = h.send(fetch_request(7, "g", {"t": [0]}))
    stable = h.send(fetch_request(7, "g", {"t": [0]}, require_stable=True))
    assert fetched(plain.topics)[("t", 0)] == (-1, -1, "", E.none)
    assert fetched(stable.topics)[("t", 0)] == (-1, -1, "", E.unstable_offset_commit)
    h.log.complete()
    response = h.answer(commit_request(9, "g", {}), out)
    assert codes(response) == {("t", 0): E.none, ("t", 1): E.none}
    group = h.group("g")
    assert group.state.value == "Empty" and group.protocol_type is None  # a "simple" group
    got = fetched(h.send(fetch_request(7, "g", {"t": [0, 1, 2]}, require_stable=True)).topics)
    assert got == {("t", 0): (5, 3, "meta", E.none), ("t", 1): (6, 3, "meta", E.none), ("t", 2): (-1, -1, "", E.none)}
    [r0, r1] = h.log.all_records()
    assert r0 == OffsetCommitRecord("g", "t", 0, OffsetValue(5, "meta", h.clock.wall_ms(), 3, -1))


async def test_failed_write_answers_mapped_error_and_reverts_to_durable():
    h = OffsetsHarness()
    h.commit(commit_request(9, "g", {("t", 0): 1}))
    out = h.commit(commit_request(9, "g", {("t", 0): 2}), complete=False)
    h.log.fail(StorageError("disk gone"))
    assert codes(h.answer(commit_request(9, "g", {}), out)) == {("t", 0): E.not_coordinator}
    assert fetched(h.send(fetch_request(7, "g", {"t": [0]})).topics)[("t", 0)][0] == 1
    out = h.commit(commit_request(9, "g", {("t", 0): 3}), complete=False)
    h.log.fail(RecordTooLargeError("too big"))
    assert codes(h.answer(commit_request(9, "g", {}), out)) == {("t", 0): E.invalid_commit_offset_size}


@pytest.mark.parametrize("version", [2, 5, 8, 9])
async def test_unknown_group_with_generation(version):
    h = OffsetsHarness()
    response = h.commit(commit_request(version, "g", {("t", 0): 1}, generation=3, member="m"))
    expected = E.group_id_not_found if version >= 9 else E.illegal_generation
    assert codes(response) == {("t", 0): expected}
    assert h.log.all_records() == []


async def test_commit_validation_per_state():
    h = OffsetsHarness()
    leader, follower = h.stable_group(2)
    gen = h.group().generation_id
    c = lambda **kw: codes(h.commit(commit_request(9, "g", {("t", 0): 1}, **kw)))[("t", 0)]  # noqa: E731
    assert c(generation=gen, member=leader) == E.none
    assert c(generation=gen + 1, member=leader) == E.illegal_generation
    assert c(generation=gen, member="stranger") == E.unknown_member_id
    assert c() == E.unknown_member_id  # generation -1, no member: only for Empty groups
    assert c(generation=gen, member=leader, instance="not-there") == E.unknown_member_id
    # CompletingRebalance: REBALANCE_IN_PROGRESS for a valid member of the new generation
    h.join(leader)
    h.join(follower)
    assert h.group().state.value == "CompletingRebalance"
    assert c(generation=gen + 1, member=leader) == E.rebalance_in_progress
    assert c(generation=gen, member=leader) == E.illegal_generation
    # Empty again: anonymous commits are allowed
    h.leave(leader, follower)
    h.log.complete()
    assert h.group().state.value == "Empty"
    assert c() == E.none


async def test_static_member_commit_fenced():
    h = OffsetsHarness()
    member, replies = h.join(instance="i-1"), None
    h.clock.advance(0)
    [result] = member
    h.sync(result.member_id, result.generation_id, {result.member_id: b""}, instance="i-1")
    h.log.complete()
    response = h.commit(commit_request(9, "g", {("t", 0): 1}, generation=result.generation_id, member="old-id",
                                       instance="i-1"))
    assert codes(response) == {("t", 0): E.fenced_instance_id}
    assert replies is None


async def test_commit_keeps_session_alive():
    h = OffsetsHarness()
    [leader] = h.stable_group(1, session=10000)
    gen = h.group().generation_id
    for _ in range(5):
        h.clock.advance(6000)
        assert codes(h.commit(commit_request(9, "g", {("t", 0): 1}, generation=gen, member=leader)))[("t", 0)] == E.none
    assert leader in h.group().members


async def test_metadata_too_large_counts_utf16_units():
    h = OffsetsHarness()
    h.coordinator.settings.offset_metadata_max_bytes = 4
    assert java_length("😀😀") == 4 and java_length("é") == 1
    ok = h.commit(commit_request(9, "g", {("t", 0): 1}, metadata="😀😀"))
    big = h.commit(commit_request(9, "g", {("t", 1): 1}, metadata="😀😀a"))
    ascii_big = h.commit(commit_request(9, "g", {("t", 2): 1}, metadata="abcde"))
    assert codes(ok) == {("t", 0): E.none}
    assert codes(big) == {("t", 1): E.offset_metadata_too_large}
    assert codes(ascii_big) == {("t", 2): E.offset_metadata_too_large}
    assert [r.partition for r in h.log.all_records()] == [0]


async def test_retention_time_sets_expire_timestamp_v2_to_v4_only():
    h = OffsetsHarness()
    h.commit(commit_request(2, "g", {("t", 0): 1}, retention_ms=60_000))
    h.commit(commit_request(4, "g", {("t", 1): 1}))
    h.commit(commit_request(6, "g", {("t", 2): 1}, epoch=9))
    now = h.clock.wall_ms()
    values = [r.value for r in h.log.all_records()]
    assert [v.expire_timestamp for v in values] == [now + 60_000, -1, -1]
    assert [v.leader_epoch for v in values] == [-1, -1, 9]


async def test_fetch_all_unknown_and_versions():
    h = OffsetsHarness()
    h.commit(commit_request(9, "g", {("a", 0): 1, ("a", 1): 2, ("b", 0): 3}, epoch=4))
    all7 = h.send(fetch_request(7, "g", None))
    assert fetched(all7.topics) == {("a", 0): (1, 4, "", E.none), ("a", 1): (2, 4, "", E.none),
                                    ("b", 0): (3, 4, "", E.none)}
    v1 = h.send(fetch_request(1, "g", {"a": [0], "zz": [5]}))
    assert fetched(v1.topics) == {("a", 0): (1, None, "", E.none), ("zz", 5): (-1, None, "", E.none)}
    unknown = h.send(fetch_request(8, "", None, groups={"nobody": None, "g": {"b": [0]}}))
    assert [(g.group_id, g.error_code, len(g.topics)) for g in unknown.groups] == [("nobody", E.none, 0),
                                                                                   ("g", E.none, 1)]
    assert fetched(unknown.groups[1].topics) == {("b", 0): (3, 4, "", E.none)}
    empty_id = h.send(fetch_request(8, "", None, groups={"": None}))
    assert empty_id.groups[0].error_code == E.invalid_group_id


async def test_fetch_all_with_pending_commit():
    h = OffsetsHarness()
    h.commit(commit_request(9, "g", {("a", 0): 1}))
    pending = h.commit(commit_request(9, "g", {("a", 0): 2, ("a", 1): 7}), complete=False)
    plain = fetched(h.send(fetch_request(9, "g", None)).groups[0].topics)
    stable = fetched(h.send(fetch_request(9, "g", None, require_stable=True)).groups[0].topics)
    assert plain == {("a", 0): (1, -1, "", E.none)}
    assert stable == {("a", 0): (-1, -1, "", E.unstable_offset_commit),
                      ("a", 1): (-1, -1, "", E.unstable_offset_commit)}
    h.log.complete()
    assert pending.future.done()
    assert fetched(h.send(fetch_request(9, "g", None)).groups[0].topics) == {
        ("a", 0): (2, -1, "", E.none), ("a", 1): (7, -1, "", E.none)}


async def test_offset_delete_cases():
    h = OffsetsHarness()
    assert h.send(delete_request("nobody", {"t": [0]})).error_code == E.group_id_not_found
    assert h.send(delete_request("", {"t": [0]})).error_code == E.invalid_group_id
    # a Stable consumer group subscribed to "t" but not "u"
    h.stable_group(1, protocols=(("range", subscription(["t"])),))
    h.commit(commit_request(9, "g", {("t", 0): 1, ("u", 0): 2}, generation=h.group().generation_id,
                            member=next(iter(h.group().members))))
    out = h.send(delete_request("g", {"t": [0], "u": [0, 1]}))
    assert isinstance(out, Deferred)
    h.log.complete()
    response = h.answer(delete_request("g", {}), out)
    assert response.error_code == E.none
    assert codes(response) == {("t", 0): E.group_subscribed_to_topic, ("u", 0): E.none, ("u", 1): E.none}
    assert h.log.all_records()[-1] == OffsetCommitRecord("g", "u", 0, None)  # only the existing offset
    # a Stable group of another protocol type: NON_EMPTY_GROUP
    member_id, replies = h.new_member(group_id="c", ptype="connect")
    h.clock.advance(0)
    [joined] = replies
    h.sync(member_id, joined.generation_id, {member_id: b""}, group_id="c", ptype="connect")
    h.log.complete()
    assert h.group("c").state.value == "Stable"
    assert h.send(delete_request("c", {"t": [0]})).error_code == E.non_empty_group
    # an Empty group: anything goes
    h.commit(commit_request(9, "e", {("t", 0): 1}))
    out = h.send(delete_request("e", {"t": [0]}))
    h.log.complete()
    assert codes(h.answer(delete_request("e", {}), out)) == {("t", 0): E.none}
    assert fetched(h.send(fetch_request(7, "e", {"t": [0]})).topics)[("t", 0)][0] == -1


async def test_delete_groups_writes_offset_tombstones():
    h = OffsetsHarness()
    h.commit(commit_request(9, "g", {("t", 0): 1, ("t", 1): 2}))
    h.log.records.clear()
    task = h.coordinator.delete_groups(["g"])
    step = task.send(None)  # waits for the tombstones
    assert step is not None
    assert sorted(h.log.all_records(), key=repr) == sorted([
        OffsetCommitRecord("g", "t", 0, None), OffsetCommitRecord("g", "t", 1, None),
        GroupMetadataRecord("g", None)], key=repr)
    assert h.coordinator.shard_for("g").offsets.by_group == {}


async def test_loading_and_unloaded_shards_answer_coordinator_errors():
    h = OffsetsHarness()
    shard = h.coordinator.shard_for("g")
    shard.set_state(ShardState.LOADING)
    assert codes(h.commit(commit_request(9, "g", {("t", 0): 1}))) == {("t", 0): E.coordinator_load_in_progress}
    assert h.send(fetch_request(9, "g", None)).groups[0].error_code == E.coordinator_load_in_progress
    assert h.send(fetch_request(6, "g", None)).error_code == E.coordinator_load_in_progress
    v1 = h.send(fetch_request(1, "g", {"t": [3]}))
    assert fetched(v1.topics) == {("t", 3): (-1, None, "", E.coordinator_load_in_progress)}
    assert h.send(delete_request("g", {"t": [0]})).error_code == E.coordinator_load_in_progress
    shard.set_state(ShardState.ACTIVE)


async def test_unload_fails_pending_and_answers_not_coordinator():
    h = OffsetsHarness()
    [leader] = h.stable_group(1, group_id="g")
    gen = h.group().generation_id
    out = h.commit(commit_request(9, "g", {("t", 0): 1}, generation=gen, member=leader), complete=False)
    h.leave(leader)  # Empty: a new member's JoinGroup waits for the initial delay
    h.settings.initial_rebalance_delay_ms = 1000
    waiting = h.join("", group_id="g", version=3)
    h.coordinator.unload(h.coordinator.shard_for("g").partition)
    assert codes(h.answer(commit_request(9, "g", {}), out)) == {("t", 0): E.not_coordinator}
    assert waiting and waiting[-1].error == E.not_coordinator
    assert codes(h.commit(commit_request(9, "g", {("t", 0): 1}))) == {("t", 0): E.not_coordinator}
    assert h.send(fetch_request(9, "g", None)).groups[0].error_code == E.not_coordinator


async def test_replaced_sync_waiter_is_answered():
    h = OffsetsHarness()
    a, ra = h.new_member()
    b, rb = h.new_member()
    h.clock.advance(0)
    gen = ra[0].generation_id
    first = h.sync(b, gen)
    second = h.sync(b, gen)
    assert first and first[0].error == E.rebalance_in_progress and second == []
    h.sync(a, gen, {a: b"A", b: b"B"})
    h.log.complete()
    assert second[0].error == E.none and second[0].assignment == b"B"


async def test_replaced_join_waiter_is_answered():
    h = OffsetsHarness()
    a, b = h.stable_group(2)
    first = h.join(a)
    second = h.join(a)
    assert first and first[0].error == E.rebalance_in_progress and second == []
