"""Share-group state in cluster mode, in one process: the share coordinator takes, gives up and loses
__share_group_state partitions (state reloaded from the partition's log at each take); the kc_share_state
notifications' payloads and bodies (round trips, malformed and too long ones); ClusterShareState routing each
request to this node's coordinator or, over a notification bus standing in for PostgreSQL's NOTIFY, to the node
holding the partition, retried while no node holds it; a former leader's late write fenced by the ownership
epoch carried as the leader epoch; share partitions dropped where their topic partition goes."""

from __future__ import annotations

import asyncio
import os
import random
import uuid
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from coordinator.cluster import share_state_codec as codec
from coordinator.cluster.share_state_remote import ClusterShareState
from coordinator.cluster.view import NO_LEADER
from coordinator.groups.share.config_settings import ShareGroupSettings
from coordinator.share.runtime.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from coordinator.share.runtime.share_partitions import Entry, SharePartitions, persister_error, state_leader_epoch
from coordinator.share.share_partition import SharePartition
from coordinator.share.state_store import Answer, ShareGroupOffset, WriteState
from rules.placement import SHARE_GROUP_STATE_TOPIC
from storage.log import PartitionLog, partition_dir
from storage.pg import share_state_calls as calls
from storage.share_state_records import StateBatch

T = uuid.UUID(int=9)
PARTITIONS = 3
EVERY_STATE_BATCH = (StateBatch(5, 9, 2, 1), StateBatch(10, 10, 0, 3), StateBatch(1000, 1_000_000, 4, 2))


def _coordinator() -> ShareCoordinator:
    return ShareCoordinator(ShareCoordinatorSettings(num_partitions=PARTITIONS, prune_interval_ms=0), "unused",
                            lambda topic_id, partition: topic_id == T and 0 <= partition < 4)


def _log(root, partition: int) -> PartitionLog:
    return PartitionLog.open(partition_dir(str(root), SHARE_GROUP_STATE_TOPIC, partition))


async def test_taking_a_partition_loads_its_state_and_giving_it_up_stops_serving_it(tmp_path):
    first = _coordinator()
    await first.start(host_all=False)
    index = first.index_of("g", T, 0)
    assert (await first.read("g", T, 0, 1)).error is ErrorCode.not_coordinator  # not taken yet
    await first.take(index, _log(tmp_path, index))
    assert (await first.initialize("g", T, 0, 1, 0)).error is ErrorCode.none
    written = await first.write(WriteState("g", T, 0, 1, 1, 5, (StateBatch(5, 9, 2, 1),), 5))
    assert written.error is ErrorCode.none
    await first.give_up(index)
    assert index not in first.partitions
    assert (await first.read("g", T, 0, 1)).error is ErrorCode.not_coordinator
    # another node takes it: the state comes back from the log alone
    second = _coordinator()
    await second.start(host_all=False)
    await second.take(index, _log(tmp_path, index))
    state = (await second.read("g", T, 0, 1)).state
    assert (state.start_offset, state.state_batches, state.leader_epoch) == (5, (StateBatch(5, 9, 2, 1),), 1)
    lost = second.lost(index)
    assert lost is not None and index not in second.partitions
    await lost.log.close()
    await first.stop()
    await second.stop()


def test_a_request_body_and_an_answer_round_trip():
    request = WriteState("g:x", T, 3, 2, 7, 5, EVERY_STATE_BATCH, 11)
    assert codec.decode_call(codec.encode_call("write", {"request": request})) == ("write", {"request": request})
    read = {"group": "g", "topic_id": T, "partition": 0, "leader_epoch": 4}
    assert codec.decode_call(codec.encode_call("read", read)) == ("read", read)
    answer = Answer(ErrorCode.none, None, ShareGroupOffset(1, 2, 3, 5, EVERY_STATE_BATCH, 10, 20, 7))
    assert codec.decode_answer(codec.encode_answer(answer)) == answer
    refused = Answer(ErrorCode.fenced_leader_epoch, "old")
    assert codec.decode_answer(codec.encode_answer(refused)) == refused


@pytest.mark.parametrize("body", [b"", b"[]", b'{"op": "drop", "group": "g"}', b'{"op": "write", "request": [1]}',
                                  b'{"op": "read", "topic_id": "zz"}', b"\xff",
                                  b'{"op": "write", "request": ["g", "' + T.hex.encode() + b'", 0, 0, 0, 0, [1, 2, 3],'
                                                                                           b' -1]}'])
def test_a_malformed_body_is_a_value_error(body):
    with pytest.raises(ValueError):
        codec.decode_call(body)


def test_notification_payloads():
    question = calls.Question(2, 17, 4, b'{"op":"read"}')
    assert calls.parse(calls.question(question)) == question
    answer = calls.Answer(2, 17, b"[0,null,null]")
    assert calls.parse(calls.answer(answer)) == answer
    for bad in ("", "x:1", "q:1:2", "q:a:2:3:AAAA", "a:1:2:not base64!", "a:1:2:" + "QUJD"):
        assert calls.parse(bad) is None
    assert calls.question(calls.Question(1, 1, 0, os.urandom(8000))) is None  # incompressible: too long
    stored_q, stored_a = calls.Question(1, 2, 3, b"", 41), calls.Answer(1, 2, b"", 42)  # ... so stored in a row
    assert calls.parse(calls.question(stored_q)) == stored_q and calls.parse(calls.answer(stored_a)) == stored_a
    assert calls.parse("q:1:2:3:@x") is None


class Bus:
    """PostgreSQL's NOTIFY for the nodes of one process: every node hears every payload; the payloads sent in one
    loop turn arrive in the reverse order (notifications sent on different connections may overtake each other)."""

    def __init__(self) -> None:
        self.nodes: list[ClusterShareState] = []
        self.sent: list[str] = []
        self._pending: list[str] = []
        self.rows: dict[int, bytes] = {}  # kc_share_state_bodies
        self.stored = 0

    async def fetchval(self, query: str, *args: object) -> object:
        if query.startswith("INSERT INTO kc_share_state_bodies"):
            self.stored += 1
            self.rows[self.stored] = args[0]  # type: ignore[assignment]
            return self.stored
        assert query.startswith("DELETE FROM kc_share_state_bodies WHERE id = $1"), query
        return self.rows.pop(args[0], None)  # type: ignore[arg-type]

    async def execute(self, query: str, *args: str) -> str:
        if query.startswith("DELETE FROM kc_share_state_bodies WHERE stored_at"):
            return "DELETE 0"
        channel, payload = args
        assert channel == calls.CHANNEL
        self.sent.append(payload)
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._deliver)
        self._pending.append(payload)
        return "SELECT 1"

    def _deliver(self) -> None:
        pending, self._pending = self._pending, []
        for payload in reversed(pending):
            for node in list(self.nodes):
                node.notified(None, 0, calls.CHANNEL, payload)


class Topic:
    def __init__(self, ready: bool = True) -> None:
        self.is_ready = ready

    def ready(self) -> bool:
        return self.is_ready


def _node(bus: Bus, node_id: int, owners: dict[int, int], topic: Topic, **timing: float) -> ClusterShareState:
    node = ClusterShareState(bus, node_id, _coordinator(), topic, lambda index: owners.get(index, NO_LEADER),
                             **timing)
    bus.nodes.append(node)
    return node


async def _asking_and_holding(tmp_path) -> tuple[Bus, ClusterShareState, ClusterShareState, int]:
    """Node 1 asks, node 2 holds the __share_group_state partition of ("g", T, 0), whose state node 1 initialized
    through node 2."""
    bus, topic, owners = Bus(), Topic(), {}
    asking, holding = _node(bus, 1, owners, topic), _node(bus, 2, owners, topic)
    index = holding.local.index_of("g", T, 0)
    await holding.local.take(index, _log(tmp_path, index))
    owners[index] = 2
    assert (await asking.initialize("g", T, 0, 1, 0)).error is ErrorCode.none
    return bus, asking, holding, index


async def test_requests_go_to_the_node_holding_the_partition(tmp_path):
    bus, asking, holding, index = await _asking_and_holding(tmp_path)
    write = WriteState("g", T, 0, 1, 3, 5, EVERY_STATE_BATCH, 2)
    assert (await asking.write(write)).error is ErrorCode.none
    state = (await asking.read("g", T, 0, 3)).state
    assert (state.start_offset, state.state_batches, state.leader_epoch) == (5, EVERY_STATE_BATCH, 3)
    assert (await asking.summary("g", T, 0)).state.delivery_complete_count == 2
    assert len(bus.sent) == 8  # four questions, four answers: nothing decided on the asking node
    # a former leader's late write (a lower ownership epoch as its leader epoch) is fenced
    late = await asking.write(WriteState("g", T, 0, 1, 2, 9))
    assert late.error is ErrorCode.fenced_leader_epoch
    assert persister_error(late).error is ErrorCode.not_leader_or_follower
    # one share partition's requests go one at a time, in the order of the calls
    order = await asyncio.gather(*(asking.write(WriteState("g", T, 0, 1, 3, 5 + i, (StateBatch(20 + i, 20 + i, 2, 1),),
                                                           i)) for i in range(4)))
    assert all(a.error is ErrorCode.none for a in order) and not asking._locks
    assert (await asking.summary("g", T, 0)).state.delivery_complete_count == 3  # the last call's, decided last
    # the holder asks itself: no notification
    sent = len(bus.sent)
    assert (await holding.delete("g", T, 0)).error is ErrorCode.none and len(bus.sent) == sent
    await holding.local.give_up(index)


async def test_a_state_too_long_for_a_notification_goes_through_a_row_both_ways(tmp_path):
    """A share partition with many thousand state batches of alternating states: its write (the question) and its
    read (the answer) do not fit a notification (some 7.9 kB after zlib); each body goes through a
    kc_share_state_bodies row the notification names, taken (deleted) by the one node it is for."""
    bus, asking, holding, index = await _asking_and_holding(tmp_path)
    rng, first, made = random.Random(7), 0, []
    for _ in range(6000):  # irregular gaps, lengths and counts: zlib cannot make them fit
        first += rng.randrange(1, 1000)
        last = first + rng.randrange(0, 50)
        made.append(StateBatch(first, last, rng.choice((0, 2, 4)), rng.randrange(1, 6)))
        first = last + 1
    batches = tuple(made)
    body = codec.encode_call("write", {"request": WriteState("g", T, 0, 1, 3, 0, batches, 0)})
    assert calls.question(calls.Question(1, 1, index, body)) is None  # too long to notify as such
    sent = len(bus.sent)
    assert (await asking.write(WriteState("g", T, 0, 1, 3, 0, batches, 0))).error is ErrorCode.none
    read = await asking.read("g", T, 0, 3)
    assert read.error is ErrorCode.none and read.state.state_batches == batches
    stored = [p.rsplit(":", 1)[1].startswith("@") for p in bus.sent[sent:]]
    assert stored == [True, False, False, True]  # the write's question and the read's answer through rows
    assert bus.stored == 2 and bus.rows == {}  # each taken once, by the node it was for
    await holding.local.give_up(index)


async def test_requests_are_retried_while_no_node_holds_the_partition(tmp_path):
    bus, owners = Bus(), {}
    topic = Topic(ready=False)
    asking = _node(bus, 1, owners, topic, backoff_s=0.05, deadline_s=0.3, answer_timeout_s=0.1)
    holding = _node(bus, 2, owners, topic)
    creating = await asking.read("g", T, 0, 1)  # the topic does not exist yet: its creation starts
    assert creating.error is ErrorCode.coordinator_not_available and not bus.sent
    topic.is_ready = True
    index = holding.local.index_of("g", T, 0)
    owners[index] = 2  # named the owner, but not holding it yet: the question goes unanswered
    assert (await asking.read("g", T, 0, 1)).error is ErrorCode.coordinator_not_available
    assert bus.sent and all(p.startswith("q:") for p in bus.sent)

    async def take_soon() -> None:
        await asyncio.sleep(0.15)
        await holding.local.take(index, _log(tmp_path, index))

    taking = asyncio.ensure_future(take_soon())
    asking.deadline_s = 5.0
    assert (await asking.initialize("g", T, 0, 1, 0)).error is ErrorCode.none  # answered once it is held
    await taking
    await holding.local.give_up(index)
    await asking.stop()
    await holding.stop()


def test_the_state_leader_epoch_is_the_ownership_epoch_in_cluster_mode():
    assert state_leader_epoch(SimpleNamespace(log=SimpleNamespace(epoch=7), leader_epoch=0)) == 7
    assert state_leader_epoch(SimpleNamespace(log=object(), leader_epoch=0)) == 0


async def test_share_partitions_go_with_their_topic_partition():
    partitions = SharePartitions(_coordinator(), SimpleNamespace(), ShareGroupSettings())
    for topic, index in (("q", 0), ("q", 1), ("r", 0)):
        key = ("g", uuid.uuid4(), index)
        partitions.entries[key] = Entry(key, topic, SharePartition(0, (), 0, 100, 5, 1000), object())
    partitions.topic_partition_gone("q", 0)
    assert sorted((e.topic, e.key[2]) for e in partitions.entries.values()) == [("q", 1), ("r", 0)]
