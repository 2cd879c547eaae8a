"""Classic-protocol members in a KIP-848 consumer group (Kafka's classicGroup*ToConsumerGroup paths), on the fake
clock: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, their timers, their offsets and their records."""

from __future__ import annotations

from kio.schema.errors import ErrorCode as E

from coordinator.groups.params import LeavingMember, SyncParams
from coordinator.offsets.manager import validate_commit
from coordinator.records.types import ConsumerGroupMemberSubscriptionRecord
from coordinator.runtime.shard import Shard
from coordinator.runtime.writes import MemoryLog
from storage.consumer_group_records import ClassicMemberMetadata
from tests.support.consumer_groups import Consumer, ConsumerHarness, FakeTopics
from tests.support.migration import ClassicConsumer, topic_partitions


def live_group() -> tuple[ConsumerHarness, Consumer]:
    h = ConsumerHarness(FakeTopics(orders=6))
    a = Consumer(h)
    a.beat()
    return h, a


def test_a_classic_member_joins_with_its_subscription_and_classic_metadata():
    h, a = live_group()
    c = ClassicConsumer(h)
    first = c.join_once()
    assert [r.error for r in first] == [E.member_id_required]
    assert first[0].member_id not in h.group().members  # nothing written for it yet
    c.member_id = first[0].member_id
    [answer] = c.join_once()
    assert answer.error is E.none and answer.protocol_type == "consumer" and answer.protocol_name == "range"
    member = h.group().members[c.member_id]
    assert answer.generation_id == member.member_epoch == h.group().group_epoch
    assert member.subscribed_topic_names == {"orders"}
    assert member.classic == ClassicMemberMetadata(10_000, member.classic.supported_protocols)
    assert member.classic.supported_protocols[0].name == "range"
    written = [r for r in h.records() if isinstance(r, ConsumerGroupMemberSubscriptionRecord)
               and r.member_id == c.member_id]
    assert written[-1].value.classic_member_metadata == member.classic


def test_the_classic_metadata_survives_a_reload():
    h, _a = live_group()
    c = ClassicConsumer(h)
    c.join()
    loaded = Shard(0, h.coordinator.settings, h.clock, MemoryLog())
    loaded.replay_all(h.records())
    assert loaded.consumer_groups["g"].members[c.member_id].classic == h.group().members[c.member_id].classic
    assert loaded.consumer_groups["g"].classic_members == 1


def test_a_protocol_no_classic_member_supports_is_refused():
    h, _a = live_group()
    ClassicConsumer(h).join()
    other = ClassicConsumer(h)
    other.protocols = lambda: (("roundrobin", b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"),)  # type: ignore
    assert other.join_once()[0].error is E.inconsistent_group_protocol


def test_sync_answers_the_current_assignment_and_heartbeats_ask_for_a_rejoin_when_it_must_change():
    h, a = live_group()
    c = ClassicConsumer(h)
    c.join()
    # a owns all six partitions: the classic member waits for them, a must revoke some
    assert c.sync().error is E.none and c.owned == {}
    assert c.heartbeat() is E.none  # waiting on partitions a still owns
    for _ in range(3):
        a.beat()
    assert c.heartbeat() is E.rebalance_in_progress  # they are free: rejoin to get them
    c.rejoin_until_synced()
    assert c.heartbeat() is E.none
    mine = c.partitions()
    assert len(mine) == 3 and not mine & topic_partitions(h, a.owned)
    assert mine | topic_partitions(h, a.owned) == {("orders", p) for p in range(6)}
    assert h.group().state.value == "Stable"


def test_a_new_member_makes_the_classic_member_rejoin_and_revoke_first():
    h, a = live_group()
    c = ClassicConsumer(h)
    c.join()
    a.beat()
    c.rejoin_until_synced()
    a.beat()
    b = Consumer(h)
    b.beat()  # the group epoch moves past the classic member
    assert c.heartbeat() is E.rebalance_in_progress
    assert c.sync().error is E.rebalance_in_progress
    c.rejoin_until_synced()
    for _ in range(4):
        a.beat()
        b.beat()
        if c.heartbeat() is E.rebalance_in_progress:
            c.rejoin_until_synced()
    owners = [c.partitions(), topic_partitions(h, a.owned), topic_partitions(h, b.owned)]
    assert sum(map(len, owners)) == 6 and len(set().union(*owners)) == 6
    assert all(len(p) == 2 for p in owners)


def test_wrong_generation_member_or_protocol():
    h, _a = live_group()
    c = ClassicConsumer(h)
    c.join()
    c.generation += 1
    assert c.heartbeat() is E.illegal_generation
    assert c.sync().error is E.illegal_generation
    c.generation -= 1
    assert h.shard().heartbeat("g", "nobody", None, c.generation) is E.unknown_member_id
    consumer_member = next(iter(m for m in h.group().members if m != c.member_id))
    assert h.shard().heartbeat("g", consumer_member, None, 1) is E.unknown_member_id  # not a classic member
    replies: list = []
    h.shard().sync(SyncParams("g", c.member_id, None, c.generation, "consumer", "other", (), 5), replies.append)
    assert replies[0].error is E.inconsistent_group_protocol


def test_offset_commits_of_a_classic_member_check_its_generation():
    h, _a = live_group()
    c = ClassicConsumer(h)
    c.join()
    shard = h.shard()
    assert validate_commit(shard, "g", c.member_id, None, c.generation, 8) is None  # v8: fine for classic members
    assert validate_commit(shard, "g", c.member_id, None, c.generation + 1, 8) is E.illegal_generation


def test_the_session_is_the_joingroup_session_timeout():
    h, _a = live_group()  # group.consumer.session.timeout.ms: 45 s
    c = ClassicConsumer(h, session_ms=10_000)
    c.join()
    c.sync()
    h.clock.advance(9_000)
    assert c.heartbeat() in (E.none, E.rebalance_in_progress)
    h.clock.advance(9_000)
    h.log.complete()
    assert c.member_id in h.group().members
    h.clock.advance(1_100)  # 10 s after the last heartbeat
    h.log.complete()
    assert c.member_id not in h.group().members


def test_a_member_that_does_not_sync_within_its_rebalance_timeout_is_fenced():
    h, _a = live_group()
    c = ClassicConsumer(h, session_ms=60_000, rebalance_ms=5_000)
    c.join()
    h.clock.advance(4_900)
    assert c.member_id in h.group().members
    h.clock.advance(200)
    h.log.complete()
    assert c.member_id not in h.group().members


def test_a_member_told_to_rejoin_must_within_its_rebalance_timeout():
    h, a = live_group()
    c = ClassicConsumer(h, session_ms=60_000, rebalance_ms=5_000)
    c.join()
    c.sync()
    Consumer(h).beat()
    assert c.heartbeat() is E.rebalance_in_progress
    h.clock.advance(3_000)
    assert c.heartbeat() is E.rebalance_in_progress  # the join timeout is armed once, not moved
    h.clock.advance(2_100)
    h.log.complete()
    assert c.member_id not in h.group().members


def test_a_member_that_rejoins_in_time_is_kept():
    h, _a = live_group()
    c = ClassicConsumer(h, session_ms=60_000, rebalance_ms=5_000)
    c.join()
    c.sync()
    Consumer(h).beat()
    assert c.heartbeat() is E.rebalance_in_progress
    c.join()
    c.sync()
    h.clock.advance(10_000)
    h.log.complete()
    assert c.member_id in h.group().members


def test_leavegroup_removes_the_member_and_bumps_the_epoch():
    h, a = live_group()
    c = ClassicConsumer(h)
    c.join()
    epoch = h.group().group_epoch
    assert c.leave() is E.none
    assert c.member_id not in h.group().members and h.group().group_epoch == epoch + 1
    answer, _ = h.shard().leave("g", [LeavingMember("nobody")])
    assert answer.members[0][2] is E.unknown_member_id


def test_static_classic_member_rejoining_with_a_new_id_replaces_the_old_one():
    h, _a = live_group()
    c = ClassicConsumer(h, instance="i-1")
    c.join()
    old = c.member_id
    c.member_id = ""
    assert c.join().error is E.none
    assert c.member_id != old and old not in h.group().members
    assert h.group().static_members["i-1"] == c.member_id
    stale = ClassicConsumer(h, instance="i-1")
    stale.member_id, stale.generation = old, c.generation
    assert stale.heartbeat() is E.fenced_instance_id


def test_consumergroupdescribe_tells_classic_members_apart():
    from coordinator.handlers.consumer_group_describe import ConsumerGroupDescribeHandler
    from coordinator.security.access import Access

    h, a = live_group()
    c = ClassicConsumer(h)
    c.join()
    handler = ConsumerGroupDescribeHandler(h.coordinator, Access(), "uniform")
    described = handler.describe_one(None, "g", False)  # type: ignore[arg-type]
    types = {m["member_id"]: m["member_type"] for m in described["members"]}
    assert types == {a.member_id: 1, c.member_id: 0}
