"""KIP-848 reconciliation (Kafka's CurrentAssignmentBuilder): CurrentAssignmentBuilderTest, case by case,
including Kafka 4.1's subscription filtering (KAFKA-19431)."""

from __future__ import annotations

import uuid

import pytest

from coordinator.errors import FencedMemberEpoch
from coordinator.groups.consumer.model import ConsumerGroupMember, MemberState
from coordinator.groups.consumer.reconciliation import next_member_state
from coordinator.groups.consumer.subscription import subscribed_topic_ids

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
IDS = {"topic1": T1, "topic2": T2}
BOTH = frozenset({T1, T2})
S, UNREVOKED, UNRELEASED = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS


def a(t1: tuple[int, ...] = (), t2: tuple[int, ...] = ()) -> dict[uuid.UUID, frozenset[int]]:
    """An assignment over topic1 / topic2 (empty topics left out)."""
    return {t: frozenset(ps) for t, ps in ((T1, t1), (T2, t2)) if ps}


def m(state: MemberState, epoch: int, previous: int, assigned, revoking=None, **kw) -> ConsumerGroupMember:
    kw.setdefault("subscribed_topic_names", frozenset({"topic1", "topic2"}))
    return ConsumerGroupMember("member", member_epoch=epoch, previous_member_epoch=previous, state=state,
                               assigned_partitions=assigned, partitions_pending_revocation=revoking or {}, **kw)


def step(member, epoch, target, partition_epoch, owned=None, *, subscribed=BOTH, changed=False):
    fn = partition_epoch if callable(partition_epoch) else (lambda _t, _p: partition_epoch)
    return next_member_state(member, epoch, target, fn, owned, subscribed_topic_ids=subscribed,
                             has_subscription_changed=changed)


def test_stable_to_stable():
    member = m(S, 10, 10, a((1, 2, 3), (4, 5, 6)))
    assert step(member, 11, a((1, 2, 3), (4, 5, 6)), 10) == m(S, 11, 10, a((1, 2, 3), (4, 5, 6)))


def test_stable_at_target_epoch_is_returned_as_is():
    member = m(S, 10, 9, a((1,)))
    assert step(member, 10, a((1, 2)), -1) is member


def test_stable_to_stable_with_new_partitions():
    member = m(S, 10, 10, a((1, 2, 3), (4, 5, 6)))
    got = step(member, 11, a((1, 2, 3, 4), (4, 5, 6, 7)), -1)
    assert got == m(S, 11, 10, a((1, 2, 3, 4), (4, 5, 6, 7)))


def test_stable_to_unrevoked_partitions():
    member = m(S, 10, 10, a((1, 2, 3), (4, 5, 6)))
    got = step(member, 11, a((2, 3, 4), (5, 6, 7)), -1)
    # the epoch does not move while revoking, and the new partitions wait
    assert got == m(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))


def test_stable_to_unreleased_partitions():
    member = m(S, 10, 10, a((1, 2, 3), (4, 5, 6)))
    got = step(member, 11, a((1, 2, 3, 4), (4, 5, 6, 7)), 10)
    assert got == m(UNRELEASED, 11, 10, a((1, 2, 3), (4, 5, 6)))


def test_stable_to_unreleased_with_owned_partitions_not_having_revoked_partitions():
    member = m(S, 10, 10, a((1, 2, 3), (4, 5, 6)))
    got = step(member, 11, a((1, 2, 3), (4, 5, 7)), lambda t, _p: 10 if t == T2 else -1, owned={})
    # 6 is gone from the target but the member reports it does not own it: no revocation round
    assert got == m(UNRELEASED, 11, 10, a((1, 2, 3), (4, 5)))


def test_unrevoked_partitions_to_stable():
    member = m(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))
    got = step(member, 11, a((2, 3), (5, 6)), -1, owned={T1: [2, 3], T2: [5, 6]})
    assert got == m(S, 11, 10, a((2, 3), (5, 6)))


@pytest.mark.parametrize("owned", [None, {T1: [1, 2, 3], T2: [5, 6]}, {T1: [2, 3], T2: [4, 5, 6]}])
def test_remains_in_unrevoked_partitions(owned):
    member = m(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))
    assert step(member, 12, a((3,), (6,)), -1, owned=owned) is member


def test_unrevoked_partitions_to_unrevoked_partitions():
    member = m(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)))
    got = step(member, 12, a((3,), (6,)), -1, owned={T1: [2, 3], T2: [5, 6]})
    # revoked 1 and 4: epoch + 1 (11, not the target 12), then 2 and 5 must go too
    assert got == m(UNREVOKED, 11, 10, a((3,), (6,)), a((2,), (5,)))


def test_unrevoked_partitions_to_unreleased_partitions():
    member = m(UNREVOKED, 11, 10, a((2, 3), (5, 6)))
    got = step(member, 11, a((2, 3, 4), (5, 6, 7)), 10, owned={T1: [2, 3], T2: [5, 6]})
    assert got == m(UNRELEASED, 11, 11, a((2, 3), (5, 6)))


def test_unreleased_partitions_to_stable():
    member = m(UNRELEASED, 11, 11, a((2, 3), (5, 6)))
    assert step(member, 12, a((2, 3), (5, 6)), 10) == m(S, 12, 11, a((2, 3), (5, 6)))


def test_unreleased_partitions_to_stable_with_new_partitions():
    member = m(UNRELEASED, 11, 11, a((2, 3), (5, 6)))
    got = step(member, 11, a((2, 3, 4), (5, 6, 7)), -1)
    assert got == m(S, 11, 11, a((2, 3, 4), (5, 6, 7)))


def test_unreleased_partitions_to_unreleased_partitions():
    member = m(UNRELEASED, 11, 11, a((2, 3), (5, 6)))
    assert step(member, 11, a((2, 3, 4), (5, 6, 7)), 10) is member


def test_unreleased_partitions_partly_released():
    member = m(UNRELEASED, 11, 11, a((2, 3), (5, 6)))
    got = step(member, 11, a((2, 3, 4), (5, 6, 7)), lambda t, _p: -1 if t == T1 else 10)
    assert got == m(UNRELEASED, 11, 11, a((2, 3, 4), (5, 6)))


def test_unreleased_partitions_to_unrevoked_partitions():
    member = m(UNRELEASED, 11, 11, a((2, 3), (5, 6)))
    got = step(member, 12, a((3,), (6,)), 10)
    assert got == m(UNREVOKED, 11, 11, a((3,), (6,)), a((2,), (5,)))


def test_unknown_state():
    member = m(MemberState.UNKNOWN, 11, 11, a((3,), (6,)), a((2,), (5,)))
    with pytest.raises(FencedMemberEpoch):
        step(member, 12, a((3,), (6,)), 10)  # owned partitions not sent
    with pytest.raises(FencedMemberEpoch):
        step(member, 12, a((3,), (6,)), 10, owned={T1: [3]})
    # then the member rejoins owning nothing
    assert step(member, 12, a((3,), (6,)), 11, owned={}) == m(S, 12, 11, a((3,), (6,)))


# --- Kafka 4.1 (KAFKA-19431): the target is filtered by the member's subscription -----------------------

TOPIC2_ONLY = frozenset({T2})


@pytest.mark.parametrize(("epoch", "target_epoch", "expected_epoch", "changed"),
                         [(10, 11, 11, False), (10, 11, 11, True), (10, 10, 10, True)])
def test_stable_to_stable_with_topics_no_longer_subscribed(epoch, target_epoch, expected_epoch, changed):
    member = m(S, epoch, epoch - 1, a((1, 2, 3), (4, 5, 6)), subscribed_topic_names=frozenset({"topic2"}))
    got = step(member, target_epoch, a((1, 2, 3), (4, 5, 6)), -1, owned={T2: [4, 5, 6]},
               subscribed=TOPIC2_ONLY, changed=changed)
    # Kafka 4.1 leaves previous_member_epoch alone when only the subscription shrank (the epoch did not
    # move); with a new target it is set by the epoch move
    previous = epoch if target_epoch != epoch else epoch - 1
    assert got == m(S, expected_epoch, previous, a((), (4, 5, 6)), subscribed_topic_names=frozenset({"topic2"}))


@pytest.mark.parametrize(("epoch", "target_epoch", "changed"), [(10, 11, False), (10, 11, True), (10, 10, True)])
def test_stable_to_unrevoked_with_topics_no_longer_subscribed(epoch, target_epoch, changed):
    member = m(S, epoch, epoch - 1, a((1, 2, 3), (4, 5, 6)), subscribed_topic_names=frozenset({"topic2"}))
    got = step(member, target_epoch, a((1, 2, 3), (4, 5, 6)), -1, owned={T1: [1, 2, 3], T2: [4, 5, 6]},
               subscribed=TOPIC2_ONLY, changed=changed)
    previous = epoch if target_epoch != epoch else epoch - 1
    assert got == m(UNREVOKED, epoch, previous, a((), (4, 5, 6)), a((1, 2, 3)),
                    subscribed_topic_names=frozenset({"topic2"}))


def test_stable_at_target_epoch_without_subscription_change_keeps_unsubscribed_topics():
    member = m(S, 10, 9, a((1, 2, 3), (4, 5, 6)), subscribed_topic_names=frozenset({"topic2"}))
    assert step(member, 10, a((1, 2, 3), (4, 5, 6)), -1, subscribed=TOPIC2_ONLY) is member


def test_remains_in_unrevoked_partitions_with_topics_no_longer_subscribed():
    member = m(UNREVOKED, 10, 10, a((2, 3), (5, 6)), a((1,), (4,)), subscribed_topic_names=frozenset({"topic2"}))
    got = step(member, 12, a((1, 3, 4), (6, 7)), -1, owned={T1: [1, 2, 3], T2: [4, 5, 6]},
               subscribed=TOPIC2_ONLY, changed=True)
    assert got == m(UNREVOKED, 10, 10, a((), (5, 6)), a((1, 2, 3), (4,)),
                    subscribed_topic_names=frozenset({"topic2"}))


def test_unrevoked_after_subscription_change_does_not_pass_the_target_epoch():
    # entered UNREVOKED through a subscription change at the target epoch: revoking does not bump the epoch
    member = m(UNREVOKED, 10, 9, a((), (4, 5, 6)), a((1, 2, 3)), subscribed_topic_names=frozenset({"topic2"}))
    got = step(member, 10, a((1, 2, 3), (4, 5, 6)), -1, owned={T2: [4, 5, 6]}, subscribed=TOPIC2_ONLY)
    assert got == m(S, 10, 10, a((), (4, 5, 6)), subscribed_topic_names=frozenset({"topic2"}))


def test_unrevoked_at_target_epoch_revoking_more_keeps_the_epoch():
    member = m(UNREVOKED, 10, 9, a((), (4, 5)), a((1,)))
    got = step(member, 10, a((), (4,)), -1, owned={T2: [4, 5]})
    assert got == m(UNREVOKED, 10, 10, a((), (4,)), a((), (5,)))  # not 11: the target epoch is 10


def _regex_member(names: frozenset[str]) -> ConsumerGroupMember:
    return m(S, 10, 10, a((1, 2, 3), (4, 5, 6)), subscribed_topic_names=names, subscribed_topic_regex="topic2*")


@pytest.mark.parametrize(("names", "regexes", "assigned", "revoking"), [
    (frozenset({"topic1"}), {}, a((1, 2, 3)), a((), (4, 5, 6))),  # unresolved regex matches nothing
    (frozenset(), {}, {}, a((1, 2, 3), (4, 5, 6))),
    (frozenset({"topic1"}), {"topic2*": {"topic2"}}, None, None),  # names + resolved regex: nothing to drop
    (frozenset(), {"topic2*": {"topic2"}}, a((), (4, 5, 6)), a((1, 2, 3))),
])
def test_regex_subscriptions(names, regexes, assigned, revoking):
    member = _regex_member(names)
    ids = subscribed_topic_ids(member, IDS, regexes)
    got = step(member, 10, a((1, 2, 3), (4, 5, 6)), -1, owned={T1: [1, 2, 3], T2: [4, 5, 6]},
               subscribed=ids, changed=True)
    if assigned is None:
        assert got is member
    else:
        assert got == m(UNREVOKED, 10, 10, assigned, revoking, subscribed_topic_names=names,
                        subscribed_topic_regex="topic2*")


def test_subscribed_topic_ids_skip_topics_that_do_not_exist():
    member = m(S, 1, 0, {}, subscribed_topic_names=frozenset({"topic1", "gone"}), subscribed_topic_regex="x")
    assert subscribed_topic_ids(member, IDS, {"x": {"topic2", "also-gone"}}) == BOTH
    assert subscribed_topic_ids(member, IDS, {}) == frozenset({T1})
