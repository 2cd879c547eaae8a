"""A whole consumer group driven by hypothesis: members join, leave and change their subscriptions, the target
is recomputed, and members heartbeat in any order, sometimes before they applied what they were given and
sometimes without reporting what they own. Through all of it no partition is owned by two members (on the
coordinator: assigned + pending revocation; on the clients: what they hold), and the partition epochs map is
exactly what the members own. Once the changes stop and everyone heartbeats, every member is STABLE at the
target epoch with exactly its target."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings, strategies as st

from coordinator.groups.consumer.model import (
    Assignment,
    ConsumerGroupMember,
    MemberState,
    MemberSubscription,
    TopicId,
    TopicMetadata,
)
from coordinator.groups.consumer.partition_epochs import IllegalStateError, PartitionEpochs
from coordinator.groups.consumer.reconciliation import next_member_state
from coordinator.groups.consumer.subscription import subscribed_topic_ids
from coordinator.groups.consumer.target_assignment import build_target_assignment
from tests.support.examples import examples

TOPICS = {"a": TopicMetadata(uuid.UUID(int=1), "a", 4), "b": TopicMetadata(uuid.UUID(int=2), "b", 3)}
IDS = {name: meta.topic_id for name, meta in TOPICS.items()}
SUBSCRIPTIONS = [frozenset({"a", "b"}), frozenset({"a"}), frozenset({"b"}), frozenset({"a", "b", "missing"})]


@dataclass
class ShuffleAssignor:
    """Hands every partition to a random subscriber; `seed` changes to force a new target."""

    seed: int = 0
    name: str = "shuffle"

    def assign(self, members: Mapping[str, MemberSubscription],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        rng = random.Random(self.seed)
        out: dict[str, dict[TopicId, set[int]]] = {m: {} for m in members}
        for topic_id in sorted(topics):
            subscribers = sorted(m for m, spec in members.items() if topic_id in spec.subscribed_topic_ids)
            for p in range(topics[topic_id].partitions) if subscribers else ():
                out[rng.choice(subscribers)].setdefault(topic_id, set()).add(p)
        return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}


@dataclass
class Client:
    held: dict[TopicId, frozenset[int]] = field(default_factory=dict)  # what the consumer really owns
    received: dict[TopicId, frozenset[int]] = field(default_factory=dict)  # last assignment from a heartbeat


class Group:
    """The coordinator side (members, targets, partition epochs) and the clients, with the invariants."""

    def __init__(self) -> None:
        self.members: dict[str, ConsumerGroupMember] = {}
        self.clients: dict[str, Client] = {}
        self.targets: dict[str, Assignment] = {}
        self.epochs = PartitionEpochs()
        self.group_epoch = 0
        self.target_epoch = 0
        self.assignor = ShuffleAssignor()
        self.next_id = 0

    def _new_target(self, updates: dict[str, ConsumerGroupMember | None]) -> None:
        self.group_epoch += 1
        result = build_target_assignment("g", self.group_epoch, self.assignor, self.members, self.targets,
                                         TOPICS, {}, updates)
        for member_id, assignment in result.changed:
            self.targets[member_id] = assignment
        for member_id, update in updates.items():
            if update is None:
                self.targets.pop(member_id, None)
        self.target_epoch = result.epoch

    def join(self, subscription: frozenset[str]) -> None:
        member_id = f"m{self.next_id}"
        self.next_id += 1
        member = ConsumerGroupMember(member_id, subscribed_topic_names=subscription)
        self._new_target({member_id: member})
        self.clients[member_id] = Client()
        self._reconcile(None, member, owned={}, subscription_changed=True)

    def leave(self, member_id: str) -> None:
        member = self.members.pop(member_id)
        self.epochs.remove_member(member)
        del self.clients[member_id]  # the consumer gave everything up before leaving
        self._new_target({member_id: None})

    def new_target(self, seed: int) -> None:
        self.assignor.seed = seed
        self._new_target({})

    def heartbeat(self, member_id: str, apply_first: bool, report_owned: bool,
                  subscription: frozenset[str] | None = None) -> None:
        client = self.clients[member_id]
        if apply_first:  # revoke what went, take what came
            client.held = dict(client.received)
        old = self.members[member_id]
        member, changed = old, False
        if subscription is not None and subscription != old.subscribed_topic_names:
            member, changed = replace(old, subscribed_topic_names=subscription), True
            self._new_target({member_id: member})
        self._reconcile(old, member, owned=dict(client.held) if report_owned else None, subscription_changed=changed)

    def _reconcile(self, old: ConsumerGroupMember | None, member: ConsumerGroupMember,
                   owned: dict | None, subscription_changed: bool) -> None:
        new = next_member_state(member, self.target_epoch, self.targets.get(member.member_id, {}), self.epochs,
                                owned, subscribed_topic_ids=subscribed_topic_ids(member, IDS, {}),
                                has_subscription_changed=subscription_changed)
        self.epochs.update_member(old, new)
        self.members[new.member_id] = new
        self.clients[new.member_id].received = dict(new.assigned_partitions)
        self.check()

    def check(self) -> None:
        owners: dict[tuple[TopicId, int], str] = {}
        expected_epochs: dict[TopicId, dict[int, int]] = {}
        for member_id, member in self.members.items():
            server = _pairs(member.assigned_partitions) | _pairs(member.partitions_pending_revocation)
            assert len(server) == _count(member.assigned_partitions) + _count(member.partitions_pending_revocation)
            for tp in server:
                assert tp not in owners, f"{tp} owned by {owners[tp]} and {member_id}"
                owners[tp] = member_id
                expected_epochs.setdefault(tp[0], {})[tp[1]] = member.member_epoch
            held = _pairs(self.clients[member_id].held)
            assert held <= server, f"{member_id} holds {held - server} the coordinator does not count as its"
        assert self.epochs.snapshot() == expected_epochs

    def converge(self) -> None:
        for _ in range(4 * len(self.members) + 4):
            for member_id in sorted(self.members):
                self.heartbeat(member_id, apply_first=True, report_owned=True)
        for member_id, member in self.members.items():
            assert member.state is MemberState.STABLE, member
            assert member.member_epoch == self.target_epoch
            assert member.assigned_partitions == self.targets.get(member_id, {})
            assert member.partitions_pending_revocation == {}
            assert self.clients[member_id].held == member.assigned_partitions


def _pairs(assignment: Assignment) -> set[tuple[TopicId, int]]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def _count(assignment: Assignment) -> int:
    return sum(len(ps) for ps in assignment.values())


OPS = st.lists(st.tuples(st.sampled_from(["join", "leave", "target", "heartbeat", "resubscribe"]),
                         st.integers(0, 1000), st.booleans(), st.booleans()), max_size=60)


@settings(max_examples=examples(300), deadline=None)
@given(OPS)
def test_group_never_double_owns_and_converges(ops):
    group = Group()
    for kind, n, flag1, flag2 in ops:
        ids = sorted(group.members)
        if kind == "join" and len(ids) < 6:
            group.join(SUBSCRIPTIONS[n % len(SUBSCRIPTIONS)])
        elif kind == "leave" and ids:
            group.leave(ids[n % len(ids)])
        elif kind == "target":
            group.new_target(n)
        elif kind == "heartbeat" and ids:
            group.heartbeat(ids[n % len(ids)], apply_first=flag1, report_owned=flag2)
        elif kind == "resubscribe" and ids:
            group.heartbeat(ids[n % len(ids)], apply_first=flag1, report_owned=flag2,
                            subscription=SUBSCRIPTIONS[(n // 7) % len(SUBSCRIPTIONS)])
    group.converge()


class _CarelessGroup(Group):
    """Hands partitions over without asking whether their owner released them."""

    def _reconcile(self, old, member, owned, subscription_changed):
        new = next_member_state(member, self.target_epoch, self.targets.get(member.member_id, {}),
                                lambda _t, _p: -1, owned, subscribed_topic_ids=subscribed_topic_ids(member, IDS, {}),
                                has_subscription_changed=subscription_changed)
        self.epochs.update_member(old, new)
        self.members[new.member_id] = new
        self.check()


def test_the_invariants_bite():
    """Without the partition-epoch gate, a joining member takes partitions the first one still owns."""
    group = _CarelessGroup()
    group.join(SUBSCRIPTIONS[0])
    assert _count(group.members["m0"].assigned_partitions) == 7
    with pytest.raises(IllegalStateError):
        group.join(SUBSCRIPTIONS[0])

