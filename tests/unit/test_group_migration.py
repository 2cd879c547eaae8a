"""Online migration between the classic and the consumer group protocols (Kafka's convertToConsumerGroup /
convertToClassicGroup), on the fake clock."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode as E

from coordinator.errors import KafkaError
from coordinator.groups.classic_group import GroupState
from coordinator.groups.consumer.assignors import default_assignors
from coordinator.groups.consumer.params import ConsumerGroupSettings
from coordinator.records.types import ConsumerGroupEpochRecord, GroupMetadataRecord
from tests.support.consumer_groups import Consumer, ConsumerHarness, FakeTopics
from tests.support.groups import assignment
from tests.support.migration import ClassicConsumer, topic_partitions

ALL = {("orders", p) for p in range(4)}


def harness(policy: str = "bidirectional") -> ConsumerHarness:
    return ConsumerHarness(FakeTopics(orders=4), consumer=ConsumerGroupSettings(
        assignors=default_assignors(), migration_policy=policy), initial_rebalance_delay_ms=0)


def stable_classic_group(h: ConsumerHarness, n: int = 2) -> list[ClassicConsumer]:
    """n classic members in a Stable classic group; the leader splits the orders partitions between them."""
    members = [ClassicConsumer(h) for _ in range(n)]
    for c in members:
        [first] = c.join_once()
        assert first.error is E.member_id_required
        c.member_id = first.member_id
    waiting = [c.join_once() for c in members]
    h.clock.advance(1)
    h.log.complete()
    for c, [answer] in zip(members, waiting):
        assert answer.error is E.none
        c.generation = answer.generation_id
    leader = next(c for c in members if c.member_id == waiting[0][0].leader)
    split = {c.member_id: assignment({"orders": list(range(i, 4, n))}) for i, c in enumerate(members)}
    syncs = [c.sync_later(split if c is leader else None) for c in members]
    h.log.complete()
    for c, [reply] in zip(members, syncs):
        assert c.take(reply).error is E.none
    assert h.shard().groups["g"].state is GroupState.STABLE
    return members


def owners(h: ConsumerHarness, classic: list[ClassicConsumer], consumers: list[Consumer]) -> list[set]:
    return [c.partitions() for c in classic] + [topic_partitions(h, c.owned) for c in consumers]


def settle(h: ConsumerHarness, classic: list[ClassicConsumer], consumers: list[Consumer], rounds: int = 6) -> None:
    for _ in range(rounds):
        for consumer in consumers:
            consumer.beat()
        for c in classic:
            if c.heartbeat() is E.rebalance_in_progress:
                c.rejoin_until_synced()
        held = owners(h, classic, consumers)
        assert sum(map(len, held)) == len(set().union(*held)), "a partition owned twice"


# --- upgrade -------------------------------------------------------------------------------------------------

def test_a_consumer_heartbeat_upgrades_a_classic_group():
    h = harness()
    classic = stable_classic_group(h)
    generation = classic[0].generation
    newcomer = Consumer(h)
    newcomer.beat()
    records = h.records()
    tombstone = records.index(GroupMetadataRecord("g", None))
    assert tombstone < records.index(ConsumerGroupEpochRecord("g", generation))  # then the group's records
    assert "g" not in h.shard().groups and "g" in h.shard().consumer_groups
    group = h.group()
    for c in classic:
        member = group.members[c.member_id]
        assert member.classic is not None and member.member_epoch == generation
        assert topic_partitions(h, member.assigned_partitions) == c.partitions()
    assert group.group_epoch == generation + 1 and newcomer.member_id in group.members
    settle(h, classic, [newcomer])
    held = owners(h, classic, [newcomer])
    assert set().union(*held) == ALL and all(held)
    assert h.group().state.value == "Stable"


def test_waiting_classic_joins_are_answered_rebalance_in_progress_on_upgrade():
    h = harness()
    classic = stable_classic_group(h)
    waiting = classic[0].join_once()  # a rejoin: the classic group rebalances, the member waits
    assert waiting == [] and h.shard().groups["g"].state is GroupState.PREPARING_REBALANCE
    Consumer(h).beat()
    assert [r.error for r in waiting] == [E.rebalance_in_progress]
    assert all(c.member_id in h.group().members for c in classic)


def test_a_member_that_never_synced_cannot_be_converted():
    """Its assignment is empty, not a ConsumerProtocolAssignment: Kafka's SchemaException, GROUP_ID_NOT_FOUND."""
    h = harness()
    stable_classic_group(h)
    late = ClassicConsumer(h)
    [first] = late.join_once()
    late.member_id = first.member_id
    waiting = late.join_once()
    with pytest.raises(KafkaError) as refused:
        Consumer(h).beat()
    assert refused.value.code is E.group_id_not_found
    assert [r.error for r in waiting] == [E.rebalance_in_progress]  # answered first, as Kafka does
    assert "g" in h.shard().groups and "g" not in h.shard().consumer_groups


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_no_upgrade_when_the_policy_forbids_it(policy):
    h = harness(policy)
    stable_classic_group(h)
    with pytest.raises(KafkaError) as refused:
        Consumer(h).beat()
    assert refused.value.code is E.group_id_not_found
    assert h.shard().groups["g"].state is GroupState.STABLE and "g" not in h.shard().consumer_groups


def test_no_upgrade_of_a_group_too_large_for_a_consumer_group():
    h = ConsumerHarness(FakeTopics(orders=4), consumer=ConsumerGroupSettings(assignors=default_assignors(),
                                                                             max_size=1),
                        initial_rebalance_delay_ms=0)
    stable_classic_group(h)
    with pytest.raises(KafkaError) as refused:
        Consumer(h).beat()
    assert refused.value.code is E.group_id_not_found


def test_a_failed_upgrade_write_leaves_the_classic_group():
    h = harness()
    classic = stable_classic_group(h)
    h.auto_complete = False
    Consumer(h).beat()
    assert "g" in h.shard().consumer_groups and "g" not in h.shard().groups
    h.log.fail(RuntimeError("disk"))
    assert "g" not in h.shard().consumer_groups
    assert set(h.shard().groups["g"].members) == {c.member_id for c in classic}


# --- downgrade -----------------------------------------------------------------------------------------------

def upgraded(policy: str = "bidirectional") -> tuple[ConsumerHarness, list[ClassicConsumer], Consumer]:
    h = harness(policy)
    classic = stable_classic_group(h)
    newcomer = Consumer(h)
    newcomer.beat()
    settle(h, classic, [newcomer])
    return h, classic, newcomer


def test_the_last_consumer_member_leaving_downgrades_the_group():
    h, classic, newcomer = upgraded()
    epoch = h.group().group_epoch
    h.heartbeat(newcomer.member_id, -1)
    assert "g" not in h.shard().consumer_groups
    group = h.shard().groups["g"]
    assert group.state is GroupState.PREPARING_REBALANCE and group.generation_id == epoch
    assert set(group.members) == {c.member_id for c in classic}
    stored = [r for r in h.records() if isinstance(r, GroupMetadataRecord) and r.value is not None][-1]
    assert stored.value.generation == epoch and {m.member_id for m in stored.value.members} == set(group.members)
    assert ConsumerGroupEpochRecord("g", None) in h.records()
    # the classic members learn it from their heartbeat and rebalance as a classic group
    assert all(c.heartbeat() is E.rebalance_in_progress for c in classic)
    waiting = [c.join_once() for c in classic]
    h.log.complete()
    leader = next(c for c, [r] in zip(classic, waiting) if r.member_id == r.leader)
    for c, [r] in zip(classic, waiting):
        c.generation = r.generation_id
    split = {c.member_id: assignment({"orders": list(range(i, 4, 2))}) for i, c in enumerate(classic)}
    syncs = [c.sync_later(split if c is leader else None) for c in classic]
    h.log.complete()
    assert all(c.take(r).error is E.none for c, [r] in zip(classic, syncs))
    assert group.state is GroupState.STABLE and set().union(*(c.partitions() for c in classic)) == ALL


def test_a_fenced_consumer_member_downgrades_the_group_too():
    h, classic, newcomer = upgraded()
    for _ in range(5):  # the classic members keep their sessions; the consumer member goes silent
        h.clock.advance(9_000)
        for c in classic:
            c.heartbeat()
        h.log.complete()
    assert "g" not in h.shard().consumer_groups and h.shard().groups["g"].members.keys() == {
        c.member_id for c in classic}


@pytest.mark.parametrize("policy", ["upgrade", "disabled"])
def test_no_downgrade_when_the_policy_forbids_it(policy):
    h, classic, newcomer = upgraded("upgrade")
    h.coordinator.settings.consumer = ConsumerGroupSettings(assignors=default_assignors(), migration_policy=policy)
    h.shard().consumer.ops.settings = h.coordinator.settings.consumer
    h.shard().settings.consumer = h.coordinator.settings.consumer
    h.heartbeat(newcomer.member_id, -1)
    assert "g" not in h.shard().groups
    assert set(h.group().members) == {c.member_id for c in classic}


def test_no_downgrade_while_another_consumer_member_remains():
    h, classic, newcomer = upgraded()
    other = Consumer(h)
    other.beat()
    h.heartbeat(newcomer.member_id, -1)
    assert "g" in h.shard().consumer_groups and other.member_id in h.group().members


def test_a_failed_downgrade_write_brings_the_consumer_group_back():
    h, classic, newcomer = upgraded()
    h.auto_complete = False
    h.heartbeat(newcomer.member_id, -1)
    assert "g" in h.shard().groups
    h.log.fail(RuntimeError("disk"))
    assert "g" not in h.shard().groups
    assert newcomer.member_id in h.group().members
