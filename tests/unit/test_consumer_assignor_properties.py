"""Properties of the server-side assignors over generated groups: validity (every subscribed partition
assigned once, to a subscriber), balance, stickiness on join and leave, determinism."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from hypothesis import given, settings, strategies as st

from coordinator.groups.consumer.model import Assignment, MemberSubscription, TopicId, TopicMetadata
from coordinator.groups.consumer.range_assignor import RangeAssignor
from coordinator.groups.consumer.uniform_assignor import UniformAssignor
from coordinator.groups.consumer.uniform_heterogeneous import assign_heterogeneous
from tests.support.assignors import check_valid, moved, owners, sizes
from tests.support.examples import examples

uniform = UniformAssignor()
range_assignor = RangeAssignor()

# topic ids with and without the top bit of a half set, so Kafka's signed order differs from Python's
TOPIC_IDS = [uuid.UUID(int=v) for v in (1, 2, 1 << 127 | 5, 1 << 63 | 3, (1 << 128) - 7, 1 << 100)]

metadata_st = st.lists(st.integers(0, 12), min_size=1, max_size=len(TOPIC_IDS)).map(
    lambda counts: {TOPIC_IDS[i]: TopicMetadata(TOPIC_IDS[i], f"t{i}", n) for i, n in enumerate(counts)})


@st.composite
def groups(draw, homogeneous: bool, with_current: bool = True):
    """(members, metadata); the current assignments are arbitrary: stale topics, out-of-range and
    duplicated partitions included."""
    metadata = draw(metadata_st)
    topic_ids = sorted(metadata)
    count = draw(st.integers(1, 8))
    shared = draw(st.sets(st.sampled_from(topic_ids)))
    members: dict[str, MemberSubscription] = {}
    for i in range(count):
        subscribed = shared if homogeneous else draw(st.sets(st.sampled_from(topic_ids)))
        current: dict[TopicId, frozenset[int]] = {}
        if with_current:
            for topic_id in draw(st.sets(st.sampled_from(TOPIC_IDS), max_size=3)):
                parts = draw(st.frozensets(st.integers(0, 14), min_size=1, max_size=6))
                current[topic_id] = parts
        member_id = f"m{draw(st.integers(0, 30))}-{i}"
        members[member_id] = MemberSubscription(member_id, frozenset(subscribed), current)
    return members, metadata


@st.composite
def balanced_groups(draw):
    """(members, metadata): a homogeneous group whose current assignment is some balanced deal of the
    partitions (shuffled, dealt round a shuffled member list), so the extra partitions sit anywhere."""
    members, metadata = draw(groups(homogeneous=True, with_current=False))
    subscribed = next(iter(members.values())).subscribed_topic_ids
    partitions = [(t, p) for t in sorted(subscribed) for p in range(metadata[t].partitions)]
    rnd = draw(st.randoms(use_true_random=False))
    rnd.shuffle(partitions)
    order = sorted(members)
    rnd.shuffle(order)
    deal: dict[str, dict[TopicId, set[int]]] = {m: {} for m in order}
    for i, (topic_id, partition) in enumerate(partitions):
        deal[order[i % len(order)]].setdefault(topic_id, set()).add(partition)
    return {m: MemberSubscription(m, subscribed, {t: frozenset(p) for t, p in deal[m].items()})
            for m in members}, metadata


def with_assignment(members: Mapping[str, MemberSubscription],
                    result: Mapping[str, Assignment]) -> dict[str, MemberSubscription]:
    return {m: MemberSubscription(m, s.subscribed_topic_ids, result[m], s.instance_id) for m, s in members.items()}


def spread(result: Mapping[str, Assignment]) -> int:
    counts = sizes(result).values()
    return max(counts) - min(counts)


@settings(max_examples=examples(150), deadline=None)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_valid_and_balanced(case):
    members, metadata = case
    result = uniform.assign(members, metadata)
    check_valid(members, metadata, result)
    assert spread(result) <= 1


@settings(max_examples=examples(150), deadline=None)
@given(groups(homogeneous=False))
def test_uniform_heterogeneous_valid_and_nothing_left_to_even_out(case):
    """Kafka's balance check: no member could hand one of its partitions to a subscriber of that topic
    holding two or more fewer partitions."""
    members, metadata = case
    result = uniform.assign(members, metadata)
    check_valid(members, metadata, result)
    counts = sizes(result)
    for (topic_id, _), owner in owners(result).items():
        for other, subscription in members.items():
            if topic_id in subscription.subscribed_topic_ids:
                assert counts[owner] - counts[other] <= 1, (owner, other, topic_id)


@settings(max_examples=examples(100), deadline=None)
@given(groups(homogeneous=False))
def test_range_valid_and_within_one_per_topic(case):
    members, metadata = case
    result = range_assignor.assign(members, metadata)
    check_valid(members, metadata, result)
    for topic_id in metadata:
        per_member = [len(result[m].get(topic_id, ())) for m, s in members.items()
                      if topic_id in s.subscribed_topic_ids]
        if per_member:
            assert max(per_member) - min(per_member) <= 1


@settings(max_examples=examples(100), deadline=None)
@given(groups(homogeneous=True, with_current=False), st.integers(1, 12))
def test_range_co_partitions_topics_of_equal_size(case, partitions):
    members, metadata = case
    equal = {t: TopicMetadata(t, m.name, partitions) for t, m in metadata.items()}
    for assigned in range_assignor.assign(members, equal).values():
        assert len(set(assigned.values())) <= 1  # the same partition numbers of every topic


@settings(max_examples=examples(100), deadline=None)
@given(st.sampled_from([True, False]).flatmap(lambda h: groups(homogeneous=h)),
       st.sampled_from([uniform, range_assignor]), st.randoms(use_true_random=False))
def test_deterministic_whatever_the_member_order(case, assignor, rnd):
    members, metadata = case
    shuffled = list(members.items())
    rnd.shuffle(shuffled)
    assert assignor.assign(members, metadata) == assignor.assign(dict(shuffled), metadata)


@settings(max_examples=examples(150), deadline=None)
@given(balanced_groups(), st.sampled_from(["a-newcomer", "m15-newcomer", "z-newcomer"]))
def test_uniform_homogeneous_join_moves_only_what_the_newcomer_gets(case, newcomer_id):
    members, metadata = case
    subscribed = next(iter(members.values())).subscribed_topic_ids
    joined = {**members, newcomer_id: MemberSubscription(newcomer_id, subscribed)}
    before = {m: s.assignment for m, s in members.items()}
    after = uniform.assign(joined, metadata)
    newcomer = {(t, p) for t, parts in after[newcomer_id].items() for p in parts}
    assert moved(before, after) == newcomer
    for member_id, assigned in before.items():
        for topic_id, parts in after[member_id].items():
            assert parts <= assigned.get(topic_id, frozenset())  # the others only give up partitions
    assert spread(after) <= 1


@settings(max_examples=examples(150), deadline=None)
@given(balanced_groups(), st.data())
def test_uniform_homogeneous_leave_moves_only_the_leavers_partitions(case, data):
    members, metadata = case
    leaver = data.draw(st.sampled_from(sorted(members)))
    remaining = {m: s for m, s in members.items() if m != leaver}
    after = uniform.assign(remaining, metadata)
    for member_id, subscription in remaining.items():
        for topic_id, parts in subscription.assignment.items():
            assert parts <= after[member_id].get(topic_id, frozenset())  # nobody loses anything
    if remaining:
        assert spread(after) <= 1


@settings(max_examples=examples(150), deadline=None)
@given(st.sampled_from([True, False]).flatmap(lambda h: groups(homogeneous=h)))
def test_uniform_assignment_is_stable(case):
    """Assigning again with nothing changed moves nothing; nor does assigning a balanced group."""
    members, metadata = case
    first = uniform.assign(members, metadata)
    assert uniform.assign(with_assignment(members, first), metadata) == first


@settings(max_examples=examples(150), deadline=None)
@given(balanced_groups())
def test_uniform_homogeneous_keeps_any_balanced_assignment(case):
    members, metadata = case
    assert uniform.assign(members, metadata) == {m: s.assignment for m, s in members.items()}


@settings(max_examples=examples(100), deadline=None)
@given(groups(homogeneous=True))
def test_heterogeneous_builder_valid_for_equal_subscriptions_too(case):
    members, metadata = case
    check_valid(members, metadata, assign_heterogeneous(members, metadata))
