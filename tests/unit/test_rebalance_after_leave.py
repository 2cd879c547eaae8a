"""A member leaves a 50-member group: the others are re-synced with no timer in the way (fake clock).

Kafka's rule (ClassicGroup / GroupMetadataManager): group.initial.rebalance.delay.ms applies only
when the group was Empty; any other rebalance completes its join phase the moment the last known
member has rejoined, and its sync phase when the leader's assignment is stored. The remaining
members learn of the rebalance from their next Heartbeat (REBALANCE_IN_PROGRESS).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.groups.classic_group import GroupState
from coordinator.groups.membership import LeavingMember
from tests.support.groups import Harness

E = ErrorCode
MEMBERS = 50
# group.initial.rebalance.delay.ms (Kafka's default); the members' rebalance timeout equals it, so
# forming the group takes one delay (each new joiner would otherwise extend it).
DELAY = 3000


def rejoin_all(h: Harness, members: list[str]) -> dict[str, list]:
    """Every member rejoins; the join phase must complete exactly at the last one."""
    replies: dict[str, list] = {}
    for index, member_id in enumerate(members):
        replies[member_id] = h.join(member_id)
        if index < len(members) - 1:
            assert replies[members[0]] == [], f"join completed before member {index + 1} of {len(members)}"
    return replies


def sync_all(h: Harness, members: list[str], leader: str, generation: int) -> dict[str, list]:
    replies = {m: h.sync(m, generation) for m in members if m != leader}
    assert all(r == [] for r in replies.values())  # followers wait for the leader's assignment
    replies[leader] = h.sync(leader, generation, {m: m.encode() for m in members})
    assert replies[leader] == []  # and for the assignment's write
    h.log.complete()
    return replies


def test_leave_in_a_50_member_group_resyncs_with_no_clock_time_passing():
    h = Harness(initial_rebalance_delay_ms=DELAY)
    leader, *followers = h.stable_group(MEMBERS, rebalance=DELAY)
    group = h.group()
    assert group.generation_id == 1
    started = h.clock.now_ms()

    result, _write = h.leave(LeavingMember(followers[0]))
    assert result.members == ((followers[0], None, E.none),)
    assert group.state is GroupState.PREPARING_REBALANCE
    remaining = [leader, *followers[1:]]
    # their next heartbeat tells them to rejoin
    assert {h.heartbeat(m, 1) for m in remaining} == {E.rebalance_in_progress}

    joined = rejoin_all(h, remaining)
    assert h.clock.now_ms() == started  # no initial delay, no rebalance timeout
    assert group.state is GroupState.COMPLETING_REBALANCE
    answers = {m: r[0] for m, r in joined.items()}
    assert {a.error for a in answers.values()} == {E.none}
    assert {a.generation_id for a in answers.values()} == {2}
    new_leader = answers[leader].leader
    assert sorted(m for m, _i, _md in answers[new_leader].members) == sorted(remaining)
    assert all(answers[m].members == () for m in remaining if m != new_leader)

    synced = sync_all(h, remaining, new_leader, 2)
    assert h.clock.now_ms() == started
    assert group.state is GroupState.STABLE
    assert all(r[0].error is E.none and r[0].assignment == m.encode() for m, r in synced.items())
    assert {h.heartbeat(m, 2) for m in remaining} == {E.none}


def test_leader_leaving_hands_leadership_to_a_rejoined_member_at_once():
    h = Harness(initial_rebalance_delay_ms=DELAY)
    leader, *followers = h.stable_group(MEMBERS, rebalance=DELAY)
    started = h.clock.now_ms()
    h.leave(LeavingMember(leader))
    joined = rejoin_all(h, followers)
    assert h.clock.now_ms() == started
    answers = {m: r[0] for m, r in joined.items()}
    new_leader = answers[followers[0]].leader
    assert new_leader in followers and len(answers[new_leader].members) == MEMBERS - 1
    synced = sync_all(h, followers, new_leader, 2)
    assert h.group().state is GroupState.STABLE and all(r[0].error is E.none for r in synced.values())


def test_a_member_that_does_not_rejoin_holds_the_join_until_the_rebalance_timeout():
    """The other side of the rule: only members that rejoin count, absent ones wait for the timeout."""
    h = Harness(initial_rebalance_delay_ms=DELAY)
    leader, *followers = h.stable_group(MEMBERS, rebalance=DELAY)
    h.leave(LeavingMember(followers[0]))
    silent = followers[1]
    joined = {m: h.join(m, rebalance=DELAY) for m in [leader, *followers[2:]]}
    assert all(r == [] for r in joined.values())
    h.clock.advance(DELAY - 1)
    assert all(r == [] for r in joined.values())
    h.clock.advance(1)
    assert all(r and r[0].error is E.none and r[0].generation_id == 2 for r in joined.values())
    assert silent not in h.group().members
