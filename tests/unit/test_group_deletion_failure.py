"""A group deletion whose write fails is taken back whole: the group and its offsets.

DeleteGroups and offset expiry delete a group by writing its tombstones (offsets, then the
group); their replay removes the group at once. When the write fails, the shard restores
the offsets (OffsetStore) and the group (Rebalancer.restore_group) before anyone is
answered, so OffsetFetch and DescribeGroups answer as before, not -1 and Dead until a
restart reloads them.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.groups.admin import describe_groups
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord
from storage.errors import StorageError
from tests.support.groups import finish
from tests.support.offsets import OffsetsHarness, commit_request, fetch_request, fetched

E = ErrorCode
RETENTION = 10 * 60_000


def empty_group_with_offsets(h: OffsetsHarness) -> None:
    """A consumer group that had a member, committed two offsets, and is Empty now."""
    [leader] = h.stable_group(1)
    generation = h.group().generation_id
    h.commit(commit_request(9, "g", {("t", 0): 5, ("t", 1): 7}, generation=generation, member=leader))
    h.leave(leader)
    h.log.complete()
    assert h.group().state.value == "Empty"


def committed(h: OffsetsHarness) -> dict:
    response = h.send(fetch_request(9, "g", {"t": [0, 1]}))
    return {key: answer[0] for key, answer in fetched(response.groups[0].topics).items()}


def described(h: OffsetsHarness) -> tuple:
    [group] = describe_groups(h.coordinator, ["g"])
    return group.state, group.protocol_type, group.error


async def test_failed_delete_groups_brings_back_the_group_and_its_offsets():
    h = OffsetsHarness()
    empty_group_with_offsets(h)
    group = h.group()
    before = (group.state, group.previous_state, group.state_timestamp, group.generation_id, group.protocol_type)
    assert committed(h) == {("t", 0): 5, ("t", 1): 7}

    deleting = h.coordinator.delete_groups(["g"])
    deleting.send(None)  # the tombstones are replayed and in flight
    assert h.coordinator.group("g") is None
    h.log.fail(StorageError("disk"))
    assert finish(deleting) == [("g", E.not_coordinator)]

    assert committed(h) == {("t", 0): 5, ("t", 1): 7}
    assert described(h) == ("Empty", "consumer", E.none)
    assert h.coordinator.group("g") is group
    assert (group.state, group.previous_state, group.state_timestamp, group.generation_id,
            group.protocol_type) == before

    # and the deletion can be retried: this time it is written
    h.log.records.clear()
    deleting = h.coordinator.delete_groups(["g"])
    deleting.send(None)
    h.log.complete()
    assert finish(deleting) == [("g", E.none)]
    assert h.log.all_records() == [OffsetCommitRecord("g", "t", 0, None), OffsetCommitRecord("g", "t", 1, None),
                                   GroupMetadataRecord("g", None)]
    assert committed(h) == {("t", 0): -1, ("t", 1): -1}
    assert described(h) == ("Dead", "", E.none)


async def test_failed_delete_groups_rearms_a_pending_members_expiry():
    h = OffsetsHarness()
    [first] = h.join(group_id="a")  # JoinGroup v9 without a member id: a pending member of an Empty group
    assert first.error is E.member_id_required
    shard = h.coordinator.shard_for("a")
    key = ("session", "a", first.member_id)
    deadline = shard.timers.deadline(key)
    assert deadline is not None

    deleting = h.coordinator.delete_groups(["a"])
    deleting.send(None)
    assert key not in shard.timers  # a deleted group's timers stop
    h.log.fail(StorageError("disk"))
    finish(deleting)

    group = h.group("a")
    assert group.is_pending_member(first.member_id)
    assert shard.timers.deadline(key) == deadline
    h.clock.advance(deadline - h.clock.now_ms())
    assert not group.is_pending_member(first.member_id)  # it expires as it would have


async def test_failed_expiry_brings_back_the_group_and_its_offsets():
    h = OffsetsHarness(offsets_retention_ms=RETENTION)
    empty_group_with_offsets(h)
    group = h.group()
    h.clock.advance(RETENTION)
    shard = h.coordinator.shard_for("g")

    assert shard.expire(h.clock.wall_ms(), RETENTION)[:2] == (2, 1)
    assert h.coordinator.group("g") is None
    h.log.fail(StorageError("disk"))

    assert committed(h) == {("t", 0): 5, ("t", 1): 7}
    assert described(h) == ("Empty", "consumer", E.none)
    assert h.coordinator.group("g") is group
    assert shard.expire(h.clock.wall_ms(), RETENTION)[:2] == (2, 1)  # the next pass tries again
    h.log.complete()
    assert h.coordinator.group("g") is None
    assert committed(h) == {("t", 0): -1, ("t", 1): -1}


async def test_a_group_created_meanwhile_is_not_replaced():
    """A simple commit to the deleted id while the tombstones are in flight makes a new
    group; the failed deletion leaves that one in place (the offsets come back, though)."""
    h = OffsetsHarness()
    empty_group_with_offsets(h)
    deleting = h.coordinator.delete_groups(["g"])
    deleting.send(None)
    h.commit(commit_request(9, "g", {("u", 0): 1}), complete=False)
    fresh = h.coordinator.group("g")
    assert fresh is not None and fresh.protocol_type is None
    h.log.fail(StorageError("disk"))
    finish(deleting)
    assert h.coordinator.group("g") is fresh
