"""The state table, the pure ClassicGroup model and the keyed timers (no I/O, no sleeps)."""

from __future__ import annotations

import itertools

import pytest
from kio.schema.errors import ErrorCode

from coordinator.errors import FencedInstanceId, UnknownMemberId
from coordinator.groups.classic_group import VALID_PREVIOUS_STATES, ClassicGroup, GroupState, IllegalStateTransition
from coordinator.groups.classic_member import Member, dedupe_protocols
from coordinator.runtime.timers import FakeScheduler, KeyedTimers

S = GroupState
KAFKA_TABLE = {  # ClassicGroupState's static block, spelled out once more on purpose
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}


def group_in(state: GroupState) -> ClassicGroup:
    group = ClassicGroup("g", 0)
    group.state = state
    return group


def test_table_is_kafkas():
    assert {k: set(v) for k, v in VALID_PREVIOUS_STATES.items()} == KAFKA_TABLE


@pytest.mark.parametrize("source,target", list(itertools.product(GroupState, GroupState)))
def test_each_transition_allowed_or_raises(source, target):
    group = group_in(source)
    if source in KAFKA_TABLE[target]:
        group.transition_to(target, 123)
        assert group.state is target and group.previous_state is source and group.state_timestamp == 123
    else:
        with pytest.raises(IllegalStateTransition):
            group.transition_to(target, 123)
        assert group.state is source


def test_state_names_are_kafkas():
    assert [s.value for s in GroupState] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


def member(member_id: str, protocols=(("range", b"r"),), instance=None) -> Member:
    return Member(member_id, instance, "client", "/h", 1000, 1000, "consumer", tuple(protocols))


def test_protocol_vote_picks_most_preferred_common_protocol():
    group = ClassicGroup("g", 0)
    group.add(member("a", [("roundrobin", b""), ("range", b""), ("sticky", b"")]))
    group.state = S.PREPARING_REBALANCE
    group.add(member("b", [("sticky", b""), ("range", b"")]))
    group.add(member("c", [("range", b""), ("sticky", b"")]))
    # roundrobin is not supported by all; b votes sticky, a and c vote range
    assert group.select_protocol() == "range"
    group.remove("c")
    group.add(member("c", [("sticky", b""), ("range", b"")]))
    assert group.select_protocol() == "sticky"


def test_supports_protocols_needs_one_protocol_all_members_support():
    group = ClassicGroup("g", 0)
    assert not group.supports_protocols("consumer", set())  # empty protocol list
    assert not group.supports_protocols("", {"range"})  # empty protocol type
    group.add(member("a", [("range", b""), ("sticky", b"")]))
    group.state = S.PREPARING_REBALANCE
    assert group.supports_protocols("consumer", {"sticky"})
    assert not group.supports_protocols("consumer", {"roundrobin"})
    assert not group.supports_protocols("connect", {"range"})


def test_leader_is_first_member_and_is_reelected_when_it_leaves():
    group = ClassicGroup("g", 0)
    for name in "abc":
        group.add(member(name))
    assert group.leader_id == "a"
    group.remove("a")
    assert group.leader_id == "b"
    group.remove("c")
    group.remove("b")
    assert group.leader_id is None


def test_validate_member_errors():
    group = ClassicGroup("g", 0)
    group.add(member("m1", instance="i1"))
    group.validate_member("m1", "i1")
    group.validate_member("m1", None)
    with pytest.raises(FencedInstanceId):
        group.validate_member("old", "i1")
    with pytest.raises(UnknownMemberId):
        group.validate_member("m1", "unknown-instance")
    with pytest.raises(UnknownMemberId):
        group.validate_member("nobody", None)


def test_duplicate_instance_id_cannot_be_added():
    group = ClassicGroup("g", 0)
    group.add(member("m1", instance="i1"))
    with pytest.raises(ValueError):
        group.add(member("m2", instance="i1"))


def test_replace_static_member_fences_waiters_and_keeps_leadership():
    group = ClassicGroup("g", 0)
    joins, syncs = [], []
    old = member("old", instance="i1")
    group.add(old, joins.append)
    old.awaiting_sync = syncs.append
    new = group.replace_static_member("i1", "old", "new")
    assert joins[0].error is ErrorCode.fenced_instance_id and joins[0].member_id == "old"
    assert syncs[0].error is ErrorCode.fenced_instance_id
    assert group.leader_id == "new" and group.static_member_id("i1") == "new" and new.group_instance_id == "i1"
    assert group.num_awaiting_join == 0


def test_dedupe_protocols_keeps_first_of_each_name():
    assert dedupe_protocols((("a", b"1"), ("b", b"2"), ("a", b"3"))) == (("a", b"1"), ("b", b"2"))


# --- keyed timers -----------------------------------------------------------------------

def test_rescheduling_a_key_replaces_the_old_timer():
    clock = FakeScheduler()
    timers = KeyedTimers(clock)
    fired = []
    timers.schedule("k", 100, lambda: fired.append("first"))
    timers.schedule("k", 200, lambda: fired.append("second"))
    clock.advance(150)
    assert fired == []
    clock.advance(50)
    assert fired == ["second"] and "k" not in timers


def test_stale_firing_is_ignored():
    """A timer the loop had already queued when its key was rescheduled must not run."""
    clock = FakeScheduler()
    timers = KeyedTimers(clock)
    fired = []
    timers.schedule("k", 100, lambda: fired.append("old"))
    timers.schedule("k", 500, lambda: fired.append("new"))
    clock._now = 100
    timers._fire()  # as if the loop ran the timer armed for the old deadline
    assert fired == [] and timers.deadline("k") == 500
    timers.cancel("k")
    clock.advance(1000)
    assert fired == []


def test_timer_errors_go_to_the_handler_not_the_loop():
    clock = FakeScheduler()
    errors = []
    timers = KeyedTimers(clock, on_error=lambda key, exc: errors.append((key, type(exc))))
    timers.schedule("bad", 1, lambda: 1 / 0)
    clock.advance(1)
    assert errors == [("bad", ZeroDivisionError)]
