"""KIP-848 consumer groups in cluster mode: a group's records live in PostgreSQL, so when its coordinator is
killed (SIGKILL) the node that takes the offsets partition over replays them, and the members carry on with the
same member ids, epochs and partitions; NOT_COORDINATOR sends them there meanwhile."""

from __future__ import annotations

import pytest
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest

from tests.clients.produce import create_topic
from tests.integration.test_consumer_group_wire import beat, owned_of
from tests.support.cluster import ClusterNodes, wait_until
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

E = ErrorCode


def coordinator_of(cluster: ClusterNodes, node_ids: set[int], group: str) -> int | None:
    for node_id in node_ids:
        node = cluster.nodes[node_id]
        with WireClient(node.host, node.port) as client:
            answer = client.call(FindCoordinatorRequest(key=group, key_type=0))
        if answer.error_code is E.none and answer.node_id in node_ids:
            return int(answer.node_id)
    return None


def test_a_consumer_group_survives_the_death_of_its_coordinator(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path, **{"broker.session.timeout.ms": "4000",
                                                "broker.heartbeat.interval.ms": "1000"})
    try:
        nodes = cluster.start_all(2)
        create_topic(nodes[0].bootstrap, "orders", 4)
        cluster.settled({1, 2})
        owner = wait_until(lambda: coordinator_of(cluster, {1, 2}, "g"), 10, "a coordinator for g")
        node = cluster.nodes[owner]
        with WireClient(node.host, node.port) as c:
            a = wait_until(lambda: (r := beat(c)).error_code is E.none and r, 10, "a joins")
            b = beat(c)
            a2 = beat(c, a.member_id, a.member_epoch, owned=owned_of(a))
            kept = owned_of(a2)
            beat(c, a.member_id, a.member_epoch, owned=kept)
            b2 = beat(c, b.member_id, b.member_epoch, owned={})
            theirs = owned_of(b2)
            assert sum(len(p) for p in kept.values()) == sum(len(p) for p in theirs.values()) == 2
        cluster.kill(owner)
        survivor = ({1, 2} - {owner}).pop()
        wait_until(lambda: coordinator_of(cluster, {survivor}, "g") == survivor, 30, "the survivor coordinates g")
        node = cluster.nodes[survivor]
        with WireClient(node.host, node.port) as c:
            def carried_on():
                answer = beat(c, a.member_id, 2, owned=kept)
                return answer if answer.error_code is E.none else None

            again = wait_until(carried_on, 20, "a's heartbeat is answered by the new coordinator")
            assert again.member_epoch == 2 and again.assignment is None  # same epoch, same partitions: nothing new
            [group] = c.call(ConsumerGroupDescribeRequest(group_ids=("g",), include_authorized_operations=False)).groups
            assert group.error_code is E.none and group.group_epoch == 2
            assert {m.member_id: {tp.topic_id: set(tp.partitions) for tp in m.assignment.topic_partitions}
                    for m in group.members} == {a.member_id: kept, b.member_id: theirs}
        assert cluster.nodes[survivor].stop() == 0
    finally:
        cluster.close()
