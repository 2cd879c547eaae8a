"""ConsumerGroupHeartbeat through the shard with a fake clock: joins, the target assignment, reconciliation
(revocation before assignment), leaving, fencing by the session and rebalance timeouts, static members, and
Kafka's errors."""

from __future__ import annotations

import dataclasses

import pytest
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.groups.consumer.assignors import default_assignors
from coordinator.groups.consumer.group import ConsumerGroupState
from coordinator.groups.consumer.model import MemberState
from coordinator.groups.consumer.params import ConsumerGroupSettings
from tests.support.consumer_groups import Consumer, ConsumerHarness, FakeTopics

E = ErrorCode


def owned_by(consumers: list[Consumer]) -> dict:
    seen: dict = {}
    for c in consumers:
        for tp in c.partitions():
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {c.member_id}"
            seen[tp] = c.member_id
    return seen


def settle(consumers: list[Consumer], rounds: int = 6) -> None:
    """Everyone heartbeats a few times, checking after each beat that no partition is owned twice."""
    for _ in range(rounds):
        for c in consumers:
            c.beat()
            owned_by(consumers)


def test_first_member_gets_every_partition_and_the_group_is_stable():
    h = ConsumerHarness()
    a = Consumer(h)
    answer = a.beat()
    assert answer.member_id and answer.member_epoch == 1 and answer.heartbeat_interval_ms == 5000
    assert a.partitions() == {(h.topics.id("orders"), p) for p in range(6)}
    group = h.group()
    assert group.state is ConsumerGroupState.STABLE and group.group_epoch == 1 and group.assignment_epoch == 1
    kinds = [type(r).__name__ for r in h.records()]
    assert len(kinds) == 6, kinds  # subscription, partition metadata, epoch, target member, target epoch, current


def test_a_second_member_gets_partitions_only_after_the_first_revokes_them():
    h = ConsumerHarness()
    a, b = Consumer(h), Consumer(h)
    a.beat()
    b.beat()  # joins: group epoch 2, a new target; its partitions are still a's
    assert b.epoch == 2 and b.partitions() == set()
    assert h.group().members[b.member_id].state is MemberState.UNRELEASED_PARTITIONS
    assert h.group().state is ConsumerGroupState.RECONCILING
    a.beat()  # told to revoke: keeps its epoch until it reports the smaller set
    assert a.epoch == 1 and len(a.partitions()) == 3
    assert h.group().members[a.member_id].state is MemberState.UNREVOKED_PARTITIONS
    b.beat()  # a has not reported yet: still nothing for b
    assert b.partitions() == set()
    a.beat()  # reports the 3 it kept: epoch 2, stable
    assert a.epoch == 2
    b.beat()
    assert len(b.partitions()) == 3 and h.group().state is ConsumerGroupState.STABLE
    assert len(owned_by([a, b])) == 6


def test_three_members_share_without_overlap_and_a_leaver_s_partitions_move():
    h = ConsumerHarness(FakeTopics(orders=7, payments=5))
    members = [Consumer(h, topics=("orders", "payments")) for _ in range(3)]
    for m in members:
        m.beat()
        settle(members)
    assert len(owned_by(members)) == 12 and sorted(len(m.partitions()) for m in members) == [4, 4, 4]
    leaver = members.pop(1)
    answer = h.heartbeat(leaver.member_id, -1, owned={})
    assert answer.member_epoch == -1
    settle(members)
    assert len(owned_by(members)) == 12 and sorted(len(m.partitions()) for m in members) == [6, 6]
    assert leaver.member_id not in h.group().members


def test_session_expiry_fences_a_silent_member_and_the_others_take_its_partitions():
    h = ConsumerHarness()
    a, b = Consumer(h), Consumer(h)
    a.beat()
    b.beat()
    settle([a, b])
    for _ in range(10):  # a keeps beating every 5 s; b stays silent
        h.clock.advance(5_000)
        a.beat()
    assert b.member_id not in h.group().members
    settle([a])
    assert len(a.partitions()) == 6 and h.group().state is ConsumerGroupState.STABLE


def test_heartbeats_keep_the_session_alive():
    h = ConsumerHarness()
    a = Consumer(h)
    a.beat()
    for _ in range(30):
        h.clock.advance(4_000)
        a.beat()
    assert a.member_id in h.group().members


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced():
    h = ConsumerHarness()
    a = Consumer(h)
    h.heartbeat("", 0, rebalance_ms=10_000)  # the stubborn one
    stubborn = next(iter(h.group().members))
    a.beat()
    h.heartbeat(stubborn, 1, owned=None)  # told to revoke; never reports the smaller set
    assert h.group().members[stubborn].state is MemberState.UNREVOKED_PARTITIONS
    h.clock.advance(10_000)
    assert stubborn not in h.group().members
    settle([a])
    assert len(a.partitions()) == 6


def test_static_member_leaves_temporarily_and_its_successor_keeps_the_partitions():
    h = ConsumerHarness()
    a, b = Consumer(h, instance="i-a"), Consumer(h, instance="i-b")
    a.beat()
    b.beat()
    settle([a, b])
    kept = a.partitions()
    answer = h.heartbeat(a.member_id, -2, instance="i-a")
    assert answer.member_epoch == -2
    again = Consumer(h, instance="i-a")
    again.beat()
    settle([again, b])
    assert again.member_id != a.member_id and again.partitions() == kept
    assert a.member_id not in h.group().members


def test_a_second_instance_with_a_live_instance_id_is_refused():
    h = ConsumerHarness()
    Consumer(h, instance="i-a").beat()
    with pytest.raises(KafkaError) as refused:
        Consumer(h, instance="i-a").beat()
    assert refused.value.code is E.unreleased_instance_id


def test_member_epochs_from_the_future_are_fenced():
    h = ConsumerHarness()
    a = Consumer(h)
    a.beat()
    with pytest.raises(KafkaError) as fenced:
        h.heartbeat(a.member_id, 7)
    assert fenced.value.code is E.fenced_member_epoch


def test_a_lost_answer_is_forgiven_only_with_the_previous_epoch_and_a_subset():
    h = ConsumerHarness()
    a, b = Consumer(h), Consumer(h)
    a.beat()
    b.beat()
    settle([a, b])
    member = h.group().members[a.member_id]
    previous = member.previous_member_epoch
    h.heartbeat(a.member_id, previous, owned=dict(a.owned))  # accepted: the answer may have been lost
    with pytest.raises(KafkaError) as fenced:
        h.heartbeat(a.member_id, previous, owned={h.topics.id("orders"): frozenset(range(6))})
    assert fenced.value.code is E.fenced_member_epoch


@pytest.mark.parametrize("kwargs, code", [
    ({"member_id": "nobody", "epoch": 3}, E.unknown_member_id),
    ({"epoch": 0, "topics": ()}, E.invalid_request),
    ({"epoch": 5, "member_id": ""}, E.invalid_request),
    ({"epoch": -3, "member_id": "m"}, E.invalid_request),
    ({"epoch": 0, "assignor": "sticky"}, E.unsupported_assignor),
    ({"epoch": 0, "topics": None, "regex": "(unclosed"}, E.invalid_regular_expression),
    ({"epoch": 0, "instance": ""}, E.invalid_request),
    ({"epoch": 0, "rack": ""}, E.invalid_request),
])
def test_bad_heartbeats_get_kafka_s_errors(kwargs, code):
    h = ConsumerHarness()
    Consumer(h).beat()  # the group exists
    with pytest.raises(KafkaError) as refused:
        h.heartbeat(**kwargs)
    assert refused.value.code is code


def test_an_unknown_group_is_not_found():
    h = ConsumerHarness()
    with pytest.raises(KafkaError) as missing:
        h.heartbeat("m", 3, group_id="other")
    assert missing.value.code is E.group_id_not_found


def test_a_full_group_refuses_new_members_but_not_its_own():
    h = ConsumerHarness(consumer=ConsumerGroupSettings(max_size=1, assignors=default_assignors()))
    a = Consumer(h)
    a.beat()
    a.beat()
    with pytest.raises(KafkaError) as full:
        Consumer(h).beat()
    assert full.value.code is E.group_max_size_reached


def test_regex_subscription_follows_new_topics():
    topics = FakeTopics(orders=2)
    h = ConsumerHarness(topics)
    a = Consumer(h, topics=())
    h.heartbeat("", 0, topics=None, regex="ord.*")
    a.member_id = next(iter(h.group().members))
    a.epoch = h.group().members[a.member_id].member_epoch
    a.beat()
    assert h.group().target_assignment[a.member_id] == {topics.id("orders"): frozenset({0, 1})}
    topics.add("orders2", 3)
    settle([a])
    assert h.group().target_assignment[a.member_id][topics.id("orders2")] == frozenset({0, 1, 2})


def test_a_topic_gaining_partitions_or_deleted_moves_the_target():
    topics = FakeTopics(orders=2)
    h = ConsumerHarness(topics)
    a = Consumer(h)
    a.beat()
    epoch = h.group().group_epoch
    topics.add("orders", 4)  # grown
    settle([a])
    assert len(a.partitions()) == 4 and h.group().group_epoch == epoch + 1
    topics.delete("orders")
    settle([a])
    assert a.partitions() == set() and h.group().group_epoch == epoch + 2


def test_a_classic_join_to_a_live_consumer_group_stays_in_it_and_takes_over_an_empty_one():
    from coordinator.groups.params import JoinParams

    h = ConsumerHarness()
    a = Consumer(h)
    a.beat()
    replies: list = []
    params = JoinParams("g", "", None, 10000, 10000, "consumer", (("range", b""),), None, "c", "/h", 9)
    h.shard().join(params, replies.append)
    assert [r.error for r in replies] == [E.member_id_required]  # a classic member of the consumer group
    assert "g" in h.shard().consumer_groups and "g" not in h.shard().groups
    h.shard().join(dataclasses.replace(params, protocol_type="other"), replies.append)
    assert replies[-1].error is E.inconsistent_group_protocol
    h.heartbeat(a.member_id, -1)
    assert h.group().is_empty
    h.shard().join(params, replies.append)
    assert replies[-1].error is E.member_id_required  # now a classic group
    assert "g" not in h.shard().consumer_groups


def test_a_consumer_heartbeat_to_a_classic_group_with_members_is_refused_and_an_empty_one_is_replaced():
    """(migration disabled: with it, tests/unit/test_group_migration.py)"""
    from coordinator.groups.params import JoinParams, LeavingMember
    from coordinator.records.types import GroupMetadataRecord

    h = ConsumerHarness(consumer=ConsumerGroupSettings(assignors=default_assignors(), migration_policy="disabled"))
    replies: list = []
    params = JoinParams("g", "", None, 10000, 10000, "consumer", (("range", b""),), None, "c", "/h", 3)
    h.shard().join(params, replies.append)
    h.log.complete()
    assert "g" in h.shard().groups
    with pytest.raises(KafkaError) as refused:
        Consumer(h).beat()
    assert refused.value.code is E.group_id_not_found
    h.clock.advance(3000)  # the initial rebalance delay: the classic member is answered, then leaves
    [joined] = replies
    h.shard().leave("g", [LeavingMember(joined.member_id)])
    h.log.complete()
    assert h.shard().groups["g"].protocol_type == "consumer" and not h.shard().groups["g"].members
    Consumer(h).beat()
    assert "g" in h.shard().consumer_groups and "g" not in h.shard().groups
    assert GroupMetadataRecord("g", None) in h.records()


@pytest.mark.parametrize("pattern", ["(a)\\1", "(?<=x)y", "a{1001}", "x" * 5000 + "("])
def test_patterns_re2_refuses_are_invalid_regular_expressions(pattern):
    """RE2J's syntax (Kafka): no backreferences or lookbehind; RE2's limits; long bad patterns too."""
    h = ConsumerHarness()
    with pytest.raises(KafkaError) as refused:
        h.heartbeat("", 0, topics=None, regex=pattern)
    assert refused.value.code is E.invalid_regular_expression


def test_a_backtracking_pattern_matches_in_linear_time():
    """(a+)+$ against a long name makes a backtracking engine run for ages; RE2 answers at once. Not a timing
    bound: the test would hang (and the suite's timeout fail it) with a backtracking engine."""
    topics = FakeTopics(**{"a" * 60 + "b": 1, "aaa": 1})
    h = ConsumerHarness(topics)
    h.heartbeat("", 0, topics=None, regex="(a+)+")
    group = h.group()
    assert set(group.subscription_metadata) == {"aaa"}
