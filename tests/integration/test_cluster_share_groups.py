"""Share groups in cluster mode, with confluent-kafka's ShareConsumer against three nodes sharing PostgreSQL.

`__share_group_state` is created by the first FindCoordinator for a share key (COORDINATOR_NOT_AVAILABLE
meanwhile), its partitions owned like the offsets partitions, and FindCoordinator answers each key's owner. Then
a node is killed -9 while a share consumer acknowledges records and another (frozen) holds some without
acknowledging: the group is served by the others within broker.session.timeout.ms + 3 s, nothing acknowledged
is delivered again, and what was held comes back (at once when the killed node led the topic partition: the
new leader loads the share partition from the durable state, where acquired records were never written; after
their lock when the share partition's leader lives on and only the state's owner died)."""

from __future__ import annotations

import datetime
import os
import signal
import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, KafkaException
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from kio.schema.share_acknowledge.v1.request import (
    AcknowledgementBatch,
    AcknowledgePartition,
    AcknowledgeTopic,
    ShareAcknowledgeRequest,
)
from kio.schema.share_fetch.v1.request import FetchPartition, FetchTopic, ShareFetchRequest
from kio.static.primitive import i32Timedelta

from rules.placement import (
    OFFSETS_TOPIC,
    SHARE_GROUP_STATE_TOPIC,
    partition_for,
    share_coordinator_key,
    share_state_partition_for,
)
from tests.clients import create_topic
from tests.support.cluster import OFFSETS_PARTITIONS, ClusterNodes, wait_until
from tests.support.share_clients import FAST_SHARE, holding_consumer, poll_until, produce, share_consumer
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

# 7, not 6: Java's String.hashCode is linear with 31 = 1 (mod 6), so over 6 offsets and 6 state partitions a group's
# state partition follows its offsets partition (shifted by the topic id's hash) and _group_for could find no group
# for some (coordinator, state) pairs; with 7 every pair is reached (checked over random topic ids)
STATE_PARTITIONS = 7
LOCK_MS = 15000  # longer than the test's steps before the kill: what the frozen consumer holds stays held
SETTINGS = {**FAST_SHARE, "share.coordinator.state.topic.num.partitions": str(STATE_PARTITIONS),
            "group.share.record.lock.duration.ms": str(LOCK_MS)}


def _find_share_coordinator(cluster: ClusterNodes, node_id: int, key: str):
    node = cluster.nodes[node_id]
    with WireClient(node.host, node.port) as client:
        [answer] = client.call(FindCoordinatorRequest(key_type=2, coordinator_keys=(key,))).coordinators
    return answer


def _state_topic_created(cluster: ClusterNodes, topic_id) -> None:
    """The first FindCoordinator for a share key creates __share_group_state (COORDINATOR_NOT_AVAILABLE until its
    partitions have owners); then every node answers each key's owner as kc_partitions names it."""
    first = _find_share_coordinator(cluster, 1, share_coordinator_key("probe", topic_id, 0))
    assert first.error_code is ErrorCode.coordinator_not_available
    wait_until(lambda: cluster.query("SELECT 1 FROM kc_topics WHERE name = $1", SHARE_GROUP_STATE_TOPIC), 10,
               f"{SHARE_GROUP_STATE_TOPIC} created")
    owners = cluster.settled({1, 2, 3})
    assert sum(1 for topic, _ in owners if topic == SHARE_GROUP_STATE_TOPIC) == STATE_PARTITIONS
    for group in ("probe", "other", "third"):
        key = share_coordinator_key(group, topic_id, 0)
        owner = owners[(SHARE_GROUP_STATE_TOPIC, share_state_partition_for(key, STATE_PARTITIONS))][0]
        for node_id in (1, 2, 3):  # each node's view follows kc_partitions a moment later (its NOTIFY)
            answer = wait_until(lambda n=node_id, k=key: (a := _find_share_coordinator(cluster, n, k)).error_code
                                is ErrorCode.none and a, 5, f"node {node_id} names a share coordinator")
            assert answer.node_id == owner


def _elsewhere_answers(cluster: ClusterNodes, node_id: int, leader: int, topic_id: uuid.UUID) -> None:
    """ShareFetch and ShareAcknowledge of q-0 on a node that does not lead it: NOT_LEADER_OR_FOLLOWER, naming the
    leader and its endpoint, as Kafka answers (the client goes there)."""
    node, led = cluster.nodes[node_id], cluster.nodes[leader]
    expected = (ErrorCode.not_leader_or_follower, leader, ((leader, led.host, led.port),))
    with WireClient(node.host, node.port) as client:
        fetched = client.call(ShareFetchRequest(
            group_id="wire", member_id="wire-member-00000000001", share_session_epoch=0,
            max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=1, max_bytes=1 << 20, max_records=10,
            batch_size=10, topics=(FetchTopic(topic_id=topic_id, partitions=(
                FetchPartition(partition_index=0, acknowledgement_batches=()),)),), forgotten_topics_data=()))
        [part] = fetched.responses[0].partitions
        endpoints = tuple((e.node_id, e.host, e.port) for e in fetched.node_endpoints)
        assert (part.error_code, part.current_leader.leader_id, endpoints) == expected
        acked = client.call(ShareAcknowledgeRequest(
            group_id="wire", member_id="wire-member-00000000001", share_session_epoch=1, topics=(AcknowledgeTopic(
                topic_id=topic_id, partitions=(AcknowledgePartition(partition_index=0, acknowledgement_batches=(
                    AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=(1,)),)),)),)))
        [part] = acked.responses[0].partitions
        endpoints = tuple((e.node_id, e.host, e.port) for e in acked.node_endpoints)
        assert (part.error_code, part.current_leader.leader_id, endpoints) == expected


def _group_for(owners: dict, topic_id, want: dict[str, int]) -> str:
    """A group id whose roles are on the nodes `want` names: "coordinator" (its offsets partition), "state" (the
    share state of q-0)."""
    for i in range(10000):
        group = f"sg{i}"
        roles = {"coordinator": owners[(OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS))][0],
                 "state": owners[(SHARE_GROUP_STATE_TOPIC, share_state_partition_for(
                     share_coordinator_key(group, topic_id, 0), STATE_PARTITIONS))][0]}
        if all(roles[role] == node for role, node in want.items()):
            return group
    raise AssertionError(f"no group with {want}")


@pytest.mark.parametrize("victim_role", ["everything", "state only"])
def test_a_share_group_survives_a_kill_9(pg_url, tmp_path, victim_role):
    cluster = ClusterNodes(pg_url, tmp_path, **SETTINGS)
    holder = c = starter = None
    try:
        cluster.start_all(3)
        create_topic(cluster.bootstrap(), "q", 1)
        topic_id = cluster.query("SELECT topic_id FROM kc_topics WHERE name = 'q'")[0]["topic_id"]
        _state_topic_created(cluster, topic_id)
        owners = cluster.settled({1, 2, 3})
        leader = owners[("q", 0)][0]
        _elsewhere_answers(cluster, next(n for n in (1, 2, 3) if n != leader), leader, topic_id)
        if victim_role == "everything":  # the node leading q-0, coordinating the group and holding its state
            victim = leader
            group = _group_for(owners, topic_id, {"coordinator": victim, "state": victim})
        else:  # the node holding the share state only; q-0's leader and the group's coordinator live on
            victim = next(n for n in (1, 2, 3) if n != leader)
            survivor = next(n for n in (1, 2, 3) if n not in (leader, victim))
            group = _group_for(owners, topic_id, {"coordinator": survivor, "state": victim})
        bootstrap = cluster.bootstrap()

        starter = share_consumer(bootstrap, group, ["q"])  # the share partition starts at the log's end (latest)
        poll_until(starter, lambda got: False, timeout=4)
        starter.close()
        starter = None
        produce(bootstrap, "q", [f"a{i}".encode() for i in range(10)])
        holder, held = holding_consumer(bootstrap, group, "q", 1)  # it holds what it got, never acknowledges
        os.kill(holder.pid, signal.SIGSTOP)  # and stays connected
        # created only now: librdkafka fetches ahead of poll(), so an earlier consumer would acquire the a's first
        c = share_consumer(bootstrap, group, ["q"], **{"share.acknowledgement.mode": "explicit",
                                                      "max.poll.records": "5"})
        produce(bootstrap, "q", [f"b{i}".encode() for i in range(40)], per_batch=5)
        everything = set(range(50))

        def ack(batch: list) -> dict:
            for m in batch:
                c.acknowledge(m, AcknowledgeType.REJECT if m.offset() % 7 == 0 else AcknowledgeType.ACCEPT)
            return c.commit_sync(10) if batch else {}

        def ack_durably(batch: list) -> None:
            failed = {tp: e for tp, e in ack(batch).items() if e is not None}
            assert not failed, failed

        before = poll_until(c, lambda got: len(got) >= 20, on_batch=ack_durably)
        acknowledged = {m.offset() for m in before}  # each batch's acknowledgements answered once durable
        assert not acknowledged & set(held) and len(acknowledged) >= 20, (held, sorted(acknowledged))

        cluster.kill(victim)
        killed = time.monotonic()
        first_after: list[float] = []  # when a record was first delivered after the kill
        durable_after: list[float] = []  # when an acknowledgement was first answered as durable after the kill

        def ack_after(batch: list) -> None:
            if batch and not first_after:
                first_after.append(time.monotonic() - killed)
            try:
                result = ack(batch)  # may fail while the group or the partition moves: those records come back
            except KafkaException:
                return
            if result and all(e is None for e in result.values()) and not durable_after:
                durable_after.append(time.monotonic() - killed)

        wanted = everything - acknowledged
        after = poll_until(c, lambda got: {m.offset() for m in got} >= wanted, timeout=LOCK_MS / 1000 + 30,
                           on_batch=ack_after)
        offsets_after = {m.offset() for m in after}
        assert not offsets_after & acknowledged, sorted(offsets_after & acknowledged)  # never delivered again
        assert offsets_after >= wanted, sorted(wanted - offsets_after)  # what was held came back too
        print("after the kill: first delivery", first_after, "first durable acknowledgement", durable_after)
        # served again: records delivered (librdkafka may hold some fetched before the kill) and acknowledged durably
        assert durable_after and durable_after[0] < cluster.session_seconds + 3, durable_after
        assert first_after[0] < cluster.session_seconds + 3, first_after
        cluster.settled(set(cluster.running()))
        for node_id in cluster.running():
            assert node_id != victim
    finally:
        for consumer in (c, starter):
            if consumer is not None:
                consumer.close()
        if holder is not None:
            holder.kill()
            holder.wait()
        cluster.close()
