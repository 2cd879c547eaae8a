"""Property (runtime/journal.py): random operations on one shard -- commits and offset tombstones, transactional
commits and markers, classic joins, syncs and leaves, consumer-group heartbeats and leaves, online upgrades and
downgrades, group deletions, expiry, timers -- while random writes fail (the log fails one and every later one,
or refuses one alone): once every write has settled, what clients see of the shard equals a fresh shard loaded
(runtime/loader.py, from a real log) from only the records that were durable.

Classic groups are compared whole only where no classic member ever joined: a classic group's GroupMetadata
value describes its in-memory state machine, which is the truth and is not taken back (its writers react to a
failed write, as Kafka's do: runtime/shard.py). Elsewhere the reload may know fewer classic groups than the live
shard (one made in memory by a JoinGroup), never one it does not know.
"""

from __future__ import annotations

import asyncio
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from coordinator.errors import KafkaError
from coordinator.groups.classic_group import GroupState
from coordinator.groups.consumer.model import LEAVE_GROUP_MEMBER_EPOCH
from coordinator.groups.consumer.params import HeartbeatParams
from coordinator.groups.params import JoinParams, LeavingMember, SyncParams
from coordinator.groups.settings import GroupSettings
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog, PendingWrite
from storage.errors import RecordTooLargeError, StorageError
from tests.support.consumer_groups import FakeTopics
from tests.support.examples import examples
from tests.support.groups import assignment, subscription
from tests.support.shard_state import classic_groups, consumer_groups, load_writes, offsets, pending_offsets

GROUPS = ("a", "b")
PRODUCERS = (100, 200)
SETTINGS = GroupSettings(offsets_partitions=1, initial_rebalance_delay_ms=0)
PROTOCOLS = (("range", subscription(["orders"])),)


class RecordingLog(MemoryLog):
    """A MemoryLog that keeps every write it was handed, in order."""

    def __init__(self) -> None:
        super().__init__(auto=False)
        self.appended: list[PendingWrite] = []

    def append(self, partition: int, pending: PendingWrite) -> None:
        self.appended.append(pending)
        super().append(partition, pending)

    def drop_settled(self) -> None:
        self.pending = [write for write in self.pending if not write.done()]


class World:
    def __init__(self) -> None:
        self.clock = FakeScheduler()
        self.log = RecordingLog()
        self.topics = FakeTopics(orders=3)
        self.coordinator = GroupCoordinator(SETTINGS, self.clock, self.log)
        self.coordinator.topic_view = self.topics
        self.shard = self.coordinator.shard_for("a")
        assert all(self.coordinator.shard_for(g) is self.shard for g in GROUPS)
        self.classic_joined: set[str] = set()  # group ids a classic member joined (see the module docstring)
        self.txn_groups: set[str] = set()  # group ids with transactional offsets (see `observed`)
        self.epochs = dict.fromkeys(PRODUCERS, 0)

    # --- offsets and transactions ------------------------------------------------------------------------

    def commit(self, group: str, partition: int, offset: int) -> None:
        self.shard.write([OffsetCommitRecord(group, "t", partition,
                                             OffsetValue(offset, "", self.clock.wall_ms(), -1, -1))])

    def tombstone(self, group: str, partition: int) -> None:
        self.shard.write([OffsetCommitRecord(group, "t", partition, None)])

    def txn_commit(self, producer: int, group: str, partition: int, offset: int, bump: bool) -> None:
        if bump:
            self.epochs[producer] += 1
        self.txn_groups.add(group)
        value = OffsetValue(offset, "txn", self.clock.wall_ms(), -1, -1)
        self.shard.txn.write(producer, self.epochs[producer], [OffsetCommitRecord(group, "t", partition, value)])

    def marker(self, producer: int, commit: bool) -> None:
        self.shard.txn.complete(producer, self.epochs[producer], commit, 0)

    # --- groups ----------------------------------------------------------------------------------------------

    def delete(self, group: str) -> None:
        self.shard.delete_groups([group])

    def expire(self) -> None:
        self.shard.expire(self.clock.wall_ms(), 1)

    def consumer_heartbeat(self, group: str, pick: int, leave: bool) -> None:
        consumer = self.shard.consumer_groups.get(group)
        members = sorted(consumer.members.values(), key=lambda m: m.member_id) if consumer is not None else []
        members = [m for m in members if not m.uses_classic_protocol]
        if not members or pick % (len(members) + 1) == len(members):
            params = HeartbeatParams(group, "", 0, None, None, 300_000, ("orders",), None, None, {}, "c", "/h", None)
        else:
            member = members[pick % len(members)]
            epoch = LEAVE_GROUP_MEMBER_EPOCH if leave else member.member_epoch
            params = HeartbeatParams(group, member.member_id, epoch, None, None, -1, None, None, None,
                                     dict(member.assigned_partitions), "c", "/h", None)
        self._consumer_heartbeat(params)

    def _consumer_heartbeat(self, params: HeartbeatParams) -> None:
        try:
            self.shard.consumer_heartbeat(params)
        except KafkaError:
            pass  # e.g. GROUP_ID_NOT_FOUND: a classic group of that id that cannot be upgraded

    def migrate(self, group: str) -> None:
        """An online upgrade (a consumer-protocol member joins a classic group with members), or a downgrade (the
        consumer-protocol members of a consumer group with classic-protocol members leave)."""
        classic, consumer = self.shard.groups.get(group), self.shard.consumer_groups.get(group)
        if classic is not None and classic.members:
            self.consumer_heartbeat(group, 0, False)
        elif consumer is not None and consumer.classic_members:
            for member_id in sorted(m.member_id for m in consumer.members.values() if not m.uses_classic_protocol):
                self._consumer_heartbeat(HeartbeatParams(group, member_id, LEAVE_GROUP_MEMBER_EPOCH, None, None, -1,
                                                         None, None, None, None, "c", "/h", None))

    def classic_join(self, group: str, sync: bool) -> None:
        self.classic_joined.add(group)
        replies: list = []
        self.shard.join(self._join_params(group, ""), replies.append)
        if replies and replies[0].member_id and replies[0].error.name == "member_id_required":
            self.shard.join(self._join_params(group, replies[0].member_id), lambda _result: None)
        self.clock.advance(0)  # the initial delay (0) ends: the join completes if every member is in
        if sync:
            self.classic_sync(group)

    def classic_rejoin(self, group: str) -> None:
        classic = self.shard.groups.get(group)
        if classic is not None and classic.state is GroupState.PREPARING_REBALANCE:
            for member_id in sorted(classic.members):
                if classic.members[member_id].awaiting_join is None:
                    self.shard.join(self._join_params(group, member_id), lambda _result: None)

    def classic_sync(self, group: str) -> None:
        classic = self.shard.groups.get(group)
        if classic is not None and classic.state is GroupState.COMPLETING_REBALANCE:
            leader = classic.leader_id
            ids = sorted(classic.members)
            given = tuple((m, assignment({"orders": [i]} if i < 3 else {})) for i, m in enumerate(ids))
            for member_id in sorted(ids, key=lambda m: m == leader):  # the leader last
                assignments = given if member_id == leader else ()
                params = SyncParams(group, member_id, None, classic.generation_id, "consumer", classic.protocol_name,
                                    assignments, 5)
                self.shard.sync(params, lambda _result: None)
        consumer = self.shard.consumer_groups.get(group)  # classic-protocol members of a consumer group
        if consumer is not None:
            for member in sorted(consumer.members.values(), key=lambda m: m.member_id):
                if member.uses_classic_protocol:
                    params = SyncParams(group, member.member_id, None, member.member_epoch, "consumer", "range", (), 5)
                    self.shard.sync(params, lambda _result: None)

    def classic_leave(self, group: str, pick: int) -> None:
        classic = self.shard.groups.get(group)
        members = sorted(classic.members) if classic is not None else []
        consumer = self.shard.consumer_groups.get(group)
        if consumer is not None:
            members = sorted(m.member_id for m in consumer.members.values() if m.uses_classic_protocol)
        if members:
            self.shard.leave(group, [LeavingMember(members[pick % len(members)])])

    def _join_params(self, group: str, member_id: str) -> JoinParams:
        return JoinParams(group, member_id, None, 10_000, 10_000, "consumer", PROTOCOLS, None, "c", "/h", 9)

    # --- the log and the clock ----------------------------------------------------------------------------

    def complete(self, count: int) -> None:
        for write in self.log.pending[:count]:
            write.resolve()
        self.log.drop_settled()

    def fail(self, index: int, alone: bool) -> None:
        """The log fails the write at `index` and every one after it, or refuses that one alone."""
        pending = self.log.pending
        if not pending:
            return
        write = pending[index % len(pending)]
        if alone:
            write.refuse(RecordTooLargeError("too large"))
        else:
            write.resolve(StorageError("flush failed"))
            for later in pending[pending.index(write):]:
                later.resolve(StorageError("flush failed"))
        self.log.drop_settled()

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    def settle(self) -> None:
        for _ in range(100):  # what a settled write's callbacks write is written in turn
            if not self.log.pending:
                return
            self.complete(len(self.log.pending))
        raise AssertionError("writes keep coming")

    def durable(self) -> list[PendingWrite]:
        return [w for w in self.log.appended if w.done() and w.exception() is None]


group = st.sampled_from(GROUPS)
OPERATIONS = st.one_of(
    st.tuples(st.just("commit"), group, st.integers(0, 2), st.integers(0, 1000)),
    st.tuples(st.just("tombstone"), group, st.integers(0, 2)),
    st.tuples(st.just("txn_commit"), st.sampled_from(PRODUCERS), group, st.integers(0, 2), st.integers(0, 1000),
              st.booleans()),
    st.tuples(st.just("marker"), st.sampled_from(PRODUCERS), st.booleans()),
    st.tuples(st.just("delete"), group),
    st.tuples(st.just("expire")),
    st.tuples(st.just("consumer_heartbeat"), group, st.integers(0, 3), st.booleans()),
    st.tuples(st.just("classic_join"), group, st.booleans()),
    st.tuples(st.just("classic_rejoin"), group),
    st.tuples(st.just("classic_sync"), group),
    st.tuples(st.just("classic_leave"), group, st.integers(0, 3)),
    st.tuples(st.just("migrate"), group),
    st.tuples(st.just("complete"), st.integers(1, 4)),
    st.tuples(st.just("fail"), st.integers(0, 8), st.booleans()),
    st.tuples(st.just("fail"), st.just(-1), st.booleans()),  # the last write made
    st.tuples(st.just("advance"), st.sampled_from((0, 500, 3_000, 11_000))),
)


def observed(world: World, shard) -> dict:
    """What the module docstring compares. Also left out: the simple group (Empty, no protocol type, no member)
    that a transactional offset made when no durable record of the group keeps it: the live replay makes it, as
    Kafka's does, but the loader's fold replays a transactional record only once its marker commits it or while it
    is still pending, so a reload does not make it again for one aborted or removed by a tombstone (a known gap
    of storage/latest.py, docs/TRANSACTIONS.md)."""
    classic = classic_groups(shard)
    return {"offsets": offsets(shard, set(GROUPS)), "pending": pending_offsets(shard),
            "consumer": consumer_groups(shard),
            "classic untouched": {g: v for g, v in classic.items() if g not in world.classic_joined
                                  and not (g in world.txn_groups and v[1:] == (None, None, 0, None, []))}}


@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPERATIONS, min_size=10, max_size=60))
def test_after_any_failures_the_shard_is_a_reload_of_what_is_durable(operations):
    world = World()
    for name, *args in operations:
        getattr(world, name)(*args)
    world.settle()
    with tempfile.TemporaryDirectory() as root:
        fresh = asyncio.run(load_writes(root, world.shard.partition, world.durable(), SETTINGS, world.topics))
    assert observed(world, world.shard) == observed(world, fresh)
    live_classic, fresh_classic = classic_groups(world.shard), classic_groups(fresh)
    assert set(fresh_classic) <= set(live_classic)
