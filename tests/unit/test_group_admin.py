"""DescribeGroups / ListGroups / DeleteGroups semantics, on the fake-clock harness."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.groups.admin import describe_groups, list_groups
from coordinator.groups.classic_group import GroupState
from coordinator.records.types import GroupMetadataRecord
from storage.errors import StorageError
from tests.support.groups import Harness, finish, rebalance_history

E = ErrorCode


def test_describe_stable_group_shows_metadata_and_assignment():
    h = Harness()
    a, b = h.stable_group(2)
    [described] = describe_groups(h.coordinator, ["g"])
    assert (described.state, described.protocol_type, described.protocol_data) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.client_id, m.client_host, m.metadata, m.assignment) for m in described.members] == [
        (a, "client", "/127.0.0.1", b"range-meta", a.encode()), (b, "client", "/127.0.0.1", b"range-meta", b.encode())]


def test_describe_rebalancing_group_has_no_metadata_or_protocol():
    h = Harness()
    a, _b = h.stable_group(2)
    h.join(a)
    [described] = describe_groups(h.coordinator, ["g"])
    assert described.state == "PreparingRebalance" and described.protocol_data == ""
    assert all(m.metadata == b"" for m in described.members)
    assert described.members[0].assignment == a.encode()  # Kafka still shows the last assignment


def test_describe_unknown_group_is_dead_and_empty():
    h = Harness()
    [described] = describe_groups(h.coordinator, ["nobody"])
    assert (described.error, described.state, described.protocol_type, described.protocol_data,
            described.members) == (E.none, "Dead", "", "", ())


def test_list_groups_with_state_and_type_filters():
    h = Harness()
    h.stable_group(1, group_id="stable")
    h.join(group_id="empty")  # Empty, with a pending member
    h.new_member(group_id="preparing", version=9)
    h2 = {g.group_id: g.state for g in list_groups(h.coordinator)}
    assert h2 == {"stable": "Stable", "empty": "Empty", "preparing": "PreparingRebalance"}
    assert sorted(g.group_id for g in list_groups(h.coordinator, (" stable ", "EMPTY"))) == ["empty", "stable"]
    assert list_groups(h.coordinator, ("dead",)) == []
    assert list_groups(h.coordinator, ("no-such-state",)) == []
    assert len(list_groups(h.coordinator, (), ("Classic",))) == 3
    assert list_groups(h.coordinator, (), ("consumer",)) == []
    assert list_groups(h.coordinator, (), ("bogus",)) == []
    assert len(list_groups(h.coordinator, (), ("bogus", "classic"))) == 3
    [empty] = list_groups(h.coordinator, ("empty",))
    assert (empty.protocol_type, empty.group_type) == ("", "classic")


async def test_delete_groups_errors_and_tombstones():
    h = Harness()
    h.stable_group(1, group_id="busy")
    a, = h.stable_group(1, group_id="idle")
    h.leave(a, group_id="idle")
    assert h.group("idle").state is GroupState.EMPTY
    h.log.records.clear()
    deleting = h.coordinator.delete_groups(["busy", "idle", "missing", None, "idle"])
    deleting.send(None)  # runs up to its wait for the tombstone write
    assert h.coordinator.group("idle") is None
    assert h.log.all_records() == [GroupMetadataRecord("idle", None)]
    h.log.complete()
    assert finish(deleting) == [("busy", E.non_empty_group), ("idle", E.none), ("missing", E.group_id_not_found),
                          (None, E.invalid_group_id)]
    assert await h.coordinator.delete_groups(["idle"]) == [("idle", E.group_id_not_found)]


async def test_delete_groups_write_failure_is_reported_per_group():
    h = Harness()
    h.join(group_id="a")
    deleting = h.coordinator.delete_groups(["a"])
    deleting.send(None)
    h.log.fail(StorageError("disk"))
    assert finish(deleting) == [("a", E.not_coordinator)]


def test_rebalance_history_keeps_the_last_twenty():
    h = Harness()
    a, = h.stable_group(1)
    for generation in range(2, 30):
        h.join(a, protocols=(("range", str(generation).encode()),))
        h.sync(a, generation, {a: b"x"})
        h.log.complete()
    history = rebalance_history(h.coordinator, "g")
    assert len(history) == 20 and history[-1].generation == 29 and history[-1].cause == "leader_rejoined"
    assert all(r.outcome == "stable" and r.members == 1 for r in history)
    assert rebalance_history(h.coordinator, "missing") == []
