"""A KIP-848 regex subscription with an authorizer (groups/consumer/regexes.py): it matches only the topics the
principal may DESCRIBE (Kafka 4's filterTopicDescribeAuthorizedTopics), resolved for the group with the
permissions of the member whose heartbeat refreshed it and kept until the next refresh (a new regex, a catalog
change); paths without a request use what was kept. Fake clock, fake catalog."""

from __future__ import annotations

from coordinator.groups.consumer.assignors import default_assignors
from coordinator.groups.consumer.params import ConsumerGroupSettings
from tests.support.consumer_groups import ConsumerHarness, FakeTopics

ALICE = frozenset({"orders", "orders-eu"}).__contains__  # may DESCRIBE these, not orders-secret


def harness(authorized: bool = True) -> tuple[ConsumerHarness, FakeTopics]:
    topics = FakeTopics(**{"orders": 2, "orders-eu": 1, "orders-secret": 3, "payments": 1})
    settings = ConsumerGroupSettings(assignors=default_assignors(), topics_authorized=authorized)
    return ConsumerHarness(topics, consumer=settings), topics


def join(h: ConsumerHarness, describable=ALICE, regex: str = "orders.*"):
    answer = h.heartbeat("", 0, topics=None, regex=regex, describable=describable)
    return answer.member_id


def assigned_topics(h: ConsumerHarness, topics: FakeTopics, member_id: str) -> set[str]:
    return {topics.name_of(t) for t in h.group().target_assignment[member_id]}


def test_a_regex_assigns_only_topics_the_member_may_describe():
    h, topics = harness()
    member = join(h)
    assert assigned_topics(h, topics, member) == {"orders", "orders-eu"}
    assert set(h.group().subscription_metadata) == {"orders", "orders-eu"}  # nor is the name recorded


def test_without_an_authorizer_a_regex_matches_every_topic():
    h, topics = harness(authorized=False)
    member = join(h, describable=None)
    assert assigned_topics(h, topics, member) == {"orders", "orders-eu", "orders-secret"}


def test_the_resolution_is_refreshed_with_the_heartbeating_members_permissions_when_the_catalog_changes():
    h, topics = harness()
    alice = join(h)
    everyone = join(h, describable=lambda name: True)  # the regex is resolved already: no refresh, no new topic
    assert set(h.group().subscription_metadata) == {"orders", "orders-eu"}
    topics.add("orders-us", 1)  # the catalog changed: the next heartbeat refreshes with its member's permissions
    epoch = h.group().members[everyone].member_epoch
    h.heartbeat(everyone, epoch, describable=lambda name: True)
    assert set(h.group().subscription_metadata) == {"orders", "orders-eu", "orders-secret", "orders-us"}
    assert alice in h.group().members


def test_a_member_fenced_by_its_session_leaves_the_others_on_the_kept_resolution():
    h, topics = harness()
    alice = join(h)
    h.heartbeat("", 0, topics=("payments",), describable=ALICE)  # another member, by name
    assert set(h.group().subscription_metadata) == {"orders", "orders-eu", "payments"}
    others = [m for m in h.group().members if m != alice]
    h.clock.advance(30_000)
    h.heartbeat(alice, h.group().members[alice].member_epoch, describable=ALICE)
    h.clock.advance(30_000)  # the payments member's session (45 s) expires: fenced by a timer, no request
    h.log.complete()
    assert others[0] not in h.group().members
    assert set(h.group().subscription_metadata) == {"orders", "orders-eu"}


def test_after_a_reload_a_regex_not_yet_refreshed_keeps_to_the_topics_already_subscribed():
    h, topics = harness()
    alice = join(h)
    h.shard().consumer.ops.regexes.forget()  # as after the partition loads again: nothing kept
    group = h.group()
    resolved = h.shard().consumer.ops.regexes.resolve(group, list(group.members.values()), topics)
    assert resolved == {"orders.*": frozenset({"orders", "orders-eu"})}
    assert alice in group.members
