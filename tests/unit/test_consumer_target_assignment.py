"""The target assignment (Kafka's TargetAssignmentBuilder; TargetAssignmentBuilderTest case by case): what the
assignor is given, and which members get a target-assignment record."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from coordinator.groups.consumer.model import (
    Assignment,
    ConsumerGroupMember,
    MemberSubscription,
    TopicId,
    TopicMetadata,
)
from coordinator.groups.consumer.target_assignment import build_target_assignment

FOO, BAR = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"foo": TopicMetadata(FOO, "foo", 6), "bar": TopicMetadata(BAR, "bar", 6)}
ALL = frozenset({"foo", "bar", "zar"})  # zar does not exist


def a(foo: tuple[int, ...] = (), bar: tuple[int, ...] = ()) -> dict[TopicId, frozenset[int]]:
    return {t: frozenset(ps) for t, ps in ((FOO, foo), (BAR, bar)) if ps}


@dataclass
class FakeAssignor:
    """Returns the prepared assignment and records what it was given (Kafka's test mocks the assignor)."""

    prepared: dict[str, Assignment]
    name: str = "fake"
    calls: list[tuple[dict[str, MemberSubscription], dict[TopicId, TopicMetadata]]] = field(default_factory=list)

    def assign(self, members: Mapping[str, MemberSubscription],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        self.calls.append((dict(members), dict(topics)))
        return dict(self.prepared)


def member(member_id: str, names=ALL, instance_id=None, rack_id=None, regex=None) -> ConsumerGroupMember:
    return ConsumerGroupMember(member_id, subscribed_topic_names=frozenset(names), instance_id=instance_id,
                               rack_id=rack_id, subscribed_topic_regex=regex)


def spec(member_id: str, assignment, ids=frozenset({FOO, BAR}), instance_id=None, rack_id=None):
    return MemberSubscription(member_id, ids, assignment, instance_id, rack_id)


def build(assignor, members, targets, updates=None, static_members=None, **kw):
    return build_target_assignment("my-group", 20, assignor, members, targets, TOPICS, static_members or {},
                                   updates, **kw)


def test_empty():
    assignor = FakeAssignor({})
    result = build(assignor, {}, {})
    assert (result.group_id, result.epoch, result.assignments, result.changed) == ("my-group", 20, {}, [])
    assert assignor.calls == [({}, {FOO: TOPICS["foo"], BAR: TOPICS["bar"]})]


def test_assignment_has_not_changed():
    targets = {"member-1": a((1, 2, 3), (1, 2, 3)), "member-2": a((4, 5, 6), (4, 5, 6))}
    assignor = FakeAssignor(dict(targets))
    result = build(assignor, {"member-1": member("member-1"), "member-2": member("member-2")}, targets)
    assert result.changed == []  # only the epoch record
    assert result.assignments == targets
    specs, _ = assignor.calls[0]
    assert specs == {"member-1": spec("member-1", targets["member-1"]),
                     "member-2": spec("member-2", targets["member-2"])}


def test_assignment_swapped():
    targets = {"member-1": a((1, 2, 3), (1, 2, 3)), "member-2": a((4, 5, 6), (4, 5, 6))}
    swapped = {"member-1": targets["member-2"], "member-2": targets["member-1"]}
    result = build(FakeAssignor(swapped), {"member-1": member("member-1"), "member-2": member("member-2")}, targets)
    assert dict(result.changed) == swapped and len(result.changed) == 2
    assert result.assignments == swapped


def test_new_member():
    targets = {"member-1": a((1, 2, 3), (1, 2, 3)), "member-2": a((4, 5, 6), (4, 5, 6))}
    new = {"member-1": a((1, 2), (1, 2)), "member-2": a((3, 4), (3, 4)), "member-3": a((5, 6), (5, 6))}
    assignor = FakeAssignor(new)
    result = build(assignor, {"member-1": member("member-1"), "member-2": member("member-2")}, targets,
                   updates={"member-3": member("member-3")})
    assert dict(result.changed) == new and len(result.changed) == 3
    assert result.assignments == new
    assert assignor.calls[0][0]["member-3"] == spec("member-3", {})


def test_update_member():
    targets = {"member-1": a((1, 2, 3), (1, 2)), "member-2": a((4, 5, 6), (3, 4)), "member-3": a((), (5, 6))}
    members = {"member-1": member("member-1"), "member-2": member("member-2"),
               "member-3": member("member-3", {"bar", "zar"})}
    new = {"member-1": a((1, 2), (1, 2)), "member-2": a((3, 4), (3, 4)), "member-3": a((5, 6), (5, 6))}
    assignor = FakeAssignor(new)
    updated = member("member-3", ALL, instance_id="instance-id-3", rack_id="rack-0")
    result = build(assignor, members, targets, updates={"member-3": updated})
    assert dict(result.changed) == new and len(result.changed) == 3
    # the assignor sees the updated subscription, with the member's current target
    assert assignor.calls[0][0]["member-3"] == spec("member-3", targets["member-3"], instance_id="instance-id-3",
                                                    rack_id="rack-0")


def test_partial_assignment_update():
    targets = {"member-1": a((1, 2), (1, 2)), "member-2": a((3, 4), (3, 4)), "member-3": a((5, 6), (5, 6))}
    members = {"member-1": member("member-1"), "member-2": member("member-2"),
               "member-3": member("member-3", {"bar", "zar"})}
    new = {"member-1": a((1, 2), (1, 2)), "member-2": a((3, 4, 5), (3, 4, 5)), "member-3": a((6,), (6,))}
    assignor = FakeAssignor(new)
    result = build(assignor, members, targets)
    # member-1 has no record: its target did not change
    assert result.changed == [("member-2", new["member-2"]), ("member-3", new["member-3"])]
    assert result.assignments == new
    assert assignor.calls[0][0]["member-3"] == spec("member-3", targets["member-3"], ids=frozenset({BAR}))


def test_delete_member():
    targets = {"member-1": a((1, 2), (1, 2)), "member-2": a((3, 4), (3, 4)), "member-3": a((5, 6), (5, 6))}
    members = {m: member(m) for m in targets}
    new = {"member-1": a((1, 2, 3), (1, 2, 3)), "member-2": a((4, 5, 6), (4, 5, 6))}
    assignor = FakeAssignor(new)
    result = build(assignor, members, targets, updates={"member-3": None})
    assert dict(result.changed) == new and len(result.changed) == 2
    assert result.assignments == new
    assert set(assignor.calls[0][0]) == {"member-1", "member-2"}


def _static_group():
    targets = {"member-1": a((1, 2), (1, 2)), "member-2": a((3, 4), (3, 4)), "member-3": a((5, 6), (5, 6))}
    members = {m: member(m, instance_id=f"instance-{m}") for m in targets}
    statics = {f"instance-{m}": m for m in targets}
    new = {"member-1": a((1, 2), (1, 2)), "member-2": a((3, 4), (3, 4)), "member-3-a": a((5, 6), (5, 6))}
    return targets, members, statics, new


def test_replace_static_member():
    targets, members, statics, new = _static_group()
    assignor = FakeAssignor(new)
    replacement = member("member-3-a", instance_id="instance-member-3")
    result = build(assignor, members, targets, static_members=statics,
                   updates={"member-3": None, "member-3-a": replacement})
    # only the new member id gets a record; it starts from the departed member's target
    assert result.changed == [("member-3-a", new["member-3-a"])]
    assert result.assignments == new
    specs = assignor.calls[0][0]
    assert specs["member-3-a"] == spec("member-3-a", targets["member-3"], instance_id="instance-member-3")
    assert "member-3" not in specs


def test_replacing_static_member_drops_the_previous_member_id_by_itself():
    """GroupMetadataManager.updateTargetAssignment removes the replaced member; build does it too."""
    targets, members, statics, new = _static_group()
    assignor = FakeAssignor(new)
    replacement = member("member-3-a", instance_id="instance-member-3")
    result = build(assignor, members, targets, static_members=statics, updates={"member-3-a": replacement})
    assert set(assignor.calls[0][0]) == {"member-1", "member-2", "member-3-a"}
    assert result.changed == [("member-3-a", new["member-3-a"])]


def test_static_member_updating_itself_keeps_its_own_target():
    targets, members, statics, _ = _static_group()
    assignor = FakeAssignor(dict(targets))
    updated = member("member-3", {"foo"}, instance_id="instance-member-3")
    result = build(assignor, members, targets, static_members=statics, updates={"member-3": updated})
    assert assignor.calls[0][0]["member-3"] == spec("member-3", targets["member-3"], ids=frozenset({FOO}),
                                                    instance_id="instance-member-3")
    assert result.changed == []


def test_regex_subscription_is_resolved_through_the_hook():
    assignor = FakeAssignor({})
    members = {"m1": member("m1", (), regex="b.*"), "m2": member("m2", {"foo"}, regex="b.*"),
               "m3": member("m3", {"foo"}, regex="unresolved")}
    build(assignor, members, {}, resolved_regexes={"b.*": {"bar", "baz"}})
    specs = assignor.calls[0][0]
    assert specs["m1"].subscribed_topic_ids == {BAR}
    assert specs["m2"].subscribed_topic_ids == {FOO, BAR}
    assert specs["m3"].subscribed_topic_ids == {FOO}


def test_members_the_assignor_leaves_out_get_an_empty_target():
    """A member with no target yet gets a record even for an empty one (Kafka: old == null); a topic with no
    partitions is not part of an assignment."""
    assignor = FakeAssignor({"m1": {FOO: frozenset({1}), BAR: frozenset()}})
    result = build(assignor, {"m1": member("m1"), "m2": member("m2"), "m3": member("m3")},
                   {"m1": a((1,)), "m3": {}})
    assert result.assignments == {"m1": a((1,)), "m2": {}, "m3": {}}
    assert result.changed == [("m2", {})]
