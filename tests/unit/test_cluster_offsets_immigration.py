"""Immigration and emigration of __consumer_offsets partitions (OffsetsRuntime.take / give_up /
lost, take_all=False as in cluster mode), on local logs: LOAD_IN_PROGRESS while a taken
partition loads, NOT_COORDINATOR once given up (waiting joins answered so), and a re-take
reloads from the log the state the partition had."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from coordinator.app import build_dispatcher
from coordinator.cluster.log_factory import LocalLogFactory
from coordinator.config import Config
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.groups.params import JoinParams, SyncParams
from coordinator.net.dispatch import Deferred, Dispatcher
from coordinator.node import Node
from coordinator.runtime.offsets_topic import OffsetsRuntime
from coordinator.services import Services
from rules.placement import partition_for
from tests.support.dispatch import known_topics
from tests.support.offsets import TEST_TOPICS, codes, commit_request, decode, fetch_request, fetched
from tests.support.wire_client import request_frame

E = ErrorCode
GROUP = "immigrants"
RANGE = (("range", b"range-meta"),)


class Node1:
    """An OffsetsRuntime owning nothing at start, its dispatcher and its local log factory."""

    def __init__(self, log_dir: str) -> None:
        config = Config.load(overrides={"log.dirs": log_dir, "group.initial.rebalance.delay.ms": "0"}, environ={})
        self.runtime = OffsetsRuntime(config, take_all=False)
        node = Node(config.node_id, "test-cluster-id-00000A", host="broker.test", port=9092)
        catalog = known_topics(TopicCatalog(node.cluster_id, config.offsets_topic_num_partitions), TEST_TOPICS)
        services = Services(config, node, catalog, groups=self.runtime.coordinator)
        self.dispatcher = build_dispatcher(services)
        self.logs = LocalLogFactory(self.runtime.durable, services.data)
        self.partition = partition_for(GROUP, config.offsets_topic_num_partitions)

    async def take(self, epoch: int) -> asyncio.Task:
        plog = await self.logs.open_offsets_partition(self.partition, epoch)
        await self.runtime.take(self.partition, plog)
        return self.runtime.loads[self.partition]

    async def call(self, request: Any) -> Any:
        out = self.dispatcher.dispatch(request_frame(request, 3)[4:], "127.0.0.1", 5555)
        if isinstance(out, Deferred):
            await asyncio.wait_for(asyncio.shield(out.future), 10)
            out = Dispatcher.finish(out)
        return decode(request, out)

    def shard(self):
        return self.runtime.coordinator.shard_for(GROUP)

    def join(self, member_id: str = "") -> list:
        replies: list = []
        self.shard().join(JoinParams(GROUP, member_id, None, 30_000, 30_000, "consumer", RANGE, None, "client",
                                     "/127.0.0.1", 9), replies.append)
        return replies

    async def offsets(self) -> tuple[ErrorCode, dict]:
        response = await self.call(fetch_request(9, GROUP, None))
        return response.groups[0].error_code, fetched(response.groups[0].topics)


async def until(condition, what: str) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


async def stable_member(node: Node1) -> str:
    """One dynamic member joined and synced: the group is Stable, its assignment written."""
    first = node.join()
    assert first[0].error is E.member_id_required
    member_id = first[0].member_id
    joined = node.join(member_id)
    await until(lambda: joined, "the join completes")
    assert joined[0].error is E.none
    synced: list = []
    node.shard().sync(SyncParams(GROUP, member_id, None, joined[0].generation_id, "consumer", "range",
                                 ((member_id, b"assignment"),), 5), synced.append)
    await until(lambda: synced, "the sync completes")
    assert synced[0].error is E.none
    return member_id


def group_state(node: Node1) -> tuple:
    group = node.runtime.coordinator.group(GROUP)
    return (group.state, group.generation_id, group.leader_id, group.protocol_name, sorted(group.members),
            {m: bytes(v.assignment or b"") for m, v in group.members.items()})


@pytest.fixture
async def node(tmp_path):
    node = Node1(str(tmp_path))
    yield node
    await node.runtime.stop()


async def test_a_partition_not_taken_is_not_coordinated_here(node):
    assert (await node.offsets())[0] == E.not_coordinator


async def test_take_give_up_and_take_again_restores_groups_and_offsets(node):
    loading = await node.take(epoch=1)
    assert (await node.offsets())[0] == E.coordinator_load_in_progress  # before the load has run
    await loading
    assert (await node.offsets()) == (E.none, {})

    member = await stable_member(node)
    generation = node.runtime.coordinator.group(GROUP).generation_id
    committed = await node.call(commit_request(9, GROUP, {("t", 0): 42, ("t", 1): 7}, generation=generation,
                                               member=member, metadata="m"))
    assert set(codes(committed).values()) == {E.none}
    await node.call(commit_request(9, GROUP, {("t", 0): 43}, generation=generation, member=member))
    before = (group_state(node), await node.offsets())

    waiting = node.join()  # a second member: its join waits for the rebalance
    newcomer = waiting[0].member_id
    waiting = node.join(newcomer)
    assert not waiting
    await node.runtime.give_up(node.partition)
    assert [r.error for r in waiting] == [E.not_coordinator]  # Kafka's onUnloaded answer
    assert (await node.offsets())[0] == E.not_coordinator
    assert node.runtime.coordinator.group(GROUP) is None and node.partition not in node.runtime.durable.logs
    assert len(node.shard().timers) == 0  # the members' session timers went with the groups

    loading = await node.take(epoch=2)
    assert (await node.offsets())[0] == E.coordinator_load_in_progress
    await loading
    assert (group_state(node), await node.offsets()) == before
    assert before[1][1][("t", 0)][0] == 43
    assert len(node.shard().timers) >= 1  # onLoaded re-armed the member's session timer


async def test_a_lost_partition_fails_its_write_in_flight_and_can_be_taken_again(node):
    await (await node.take(epoch=1))
    await node.call(commit_request(9, GROUP, {("t", 0): 1}))
    out = node.dispatcher.dispatch(request_frame(commit_request(9, GROUP, {("t", 0): 2}), 3)[4:], "127.0.0.1", 1)
    assert isinstance(out, Deferred)  # waiting for its write
    node.runtime.lost(node.partition)
    await asyncio.wait_for(asyncio.shield(out.future), 10)
    assert set(codes(decode(commit_request(9, GROUP, {}), Dispatcher.finish(out))).values()) == {E.not_coordinator}
    assert (await node.offsets())[0] == E.not_coordinator

    await (await node.take(epoch=2))
    code, offsets = await node.offsets()
    assert code == E.none and offsets[("t", 0)][0] in (1, 2)  # the failed write may still have reached the log


async def test_give_up_lets_the_writes_in_flight_finish_first(node):
    await (await node.take(epoch=1))
    request = commit_request(9, GROUP, {("t", 0): 5})
    out = node.dispatcher.dispatch(request_frame(request, 3)[4:], "127.0.0.1", 1)
    assert isinstance(out, Deferred) and not out.future.done()  # its write is queued
    await node.runtime.give_up(node.partition)
    assert out.future.done()
    assert set(codes(decode(request, Dispatcher.finish(out))).values()) == {E.none}  # durable, answered so

    await (await node.take(epoch=2))
    assert (await node.offsets())[1][("t", 0)][0] == 5
