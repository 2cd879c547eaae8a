"""Three nodes on one PostgreSQL: every node answers Metadata and FindCoordinator alike (bootstrap to any
node), SIGTERM hands a node's partitions off without waiting for its session, and a restarted node takes a
share again."""

from __future__ import annotations

import time

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest

from tests.clients.produce import create_topic
from tests.support.cluster import ClusterNodes, wait_until
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

METADATA_ALL = MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
TOPIC = "handoff"
PARTITIONS = 6
SESSION_MS = 20000  # long: a hand-off that waited for the session would fail the bounds below


def owned_by(cluster: ClusterNodes, node_ids: set[int]) -> dict[tuple[str, int], int] | None:
    """Every partition's owner when each is owned by one of `node_ids` and each of them owns one."""
    owners = {key: owner for key, (owner, _epoch) in cluster.owners().items()}
    if any(owner not in node_ids for owner in owners.values()) or set(owners.values()) != node_ids:
        return None
    return owners


def view_of(node) -> tuple:
    """What one node tells a client: brokers, controller, each partition's leader, coordinators."""
    with WireClient(node.host, node.port) as client:
        metadata = client.call(METADATA_ALL)
        coordinators = []
        for group in ("g-a", "g-b", "g-c", "g-d"):
            answer = client.call(FindCoordinatorRequest(key=group, key_type=0))
            coordinators.append((answer.error_code, answer.node_id))
    brokers = sorted((b.node_id, b.host, b.port) for b in metadata.brokers)
    leaders = sorted((t.name, p.partition_index, p.error_code, p.leader_id)
                     for t in metadata.topics for p in t.partitions)
    return brokers, metadata.controller_id, leaders, coordinators


def test_any_node_bootstraps_sigterm_hands_off_and_a_restarted_node_takes_a_share(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path, **{"broker.session.timeout.ms": str(SESSION_MS),
                                                "broker.heartbeat.interval.ms": "1000"})
    try:
        nodes = cluster.start_all(3)
        create_topic(nodes[0].bootstrap, TOPIC, PARTITIONS)
        owners = wait_until(lambda: owned_by(cluster, {1, 2, 3}), 30, "each node owns a share of every topic")

        views = [view_of(node) for node in nodes]
        assert views[0] == views[1] == views[2], "nodes disagree on what clients are told"
        brokers, controller, leaders, coordinators = views[0]
        assert brokers == sorted((n, cluster.nodes[n].host, cluster.nodes[n].port) for n in (1, 2, 3))
        assert controller in (1, 2, 3)
        assert all(code == ErrorCode.none for code, _ in coordinators)
        assert {(name, p): leader for name, p, code, leader in leaders if code == ErrorCode.none} == owners

        stopping = time.monotonic()
        assert cluster.nodes[2].stop() == 0  # SIGTERM: hand off, deregister, exit 0
        wait_until(lambda: owned_by(cluster, {1, 3}), 5, "node 2's partitions owned by nodes 1 and 3")
        assert time.monotonic() - stopping < SESSION_MS / 1000 / 2
        assert cluster.live_nodes() == {1, 3}

        cluster.start(2)
        wait_until(lambda: owned_by(cluster, {1, 2, 3}), 30, "the restarted node 2 owns a share again")
        wait_until(lambda: all(len(view_of(cluster.nodes[n])[0]) == 3 for n in (1, 2, 3)), 10,
                   "every node lists the restarted node")
        for node_id in (1, 2, 3):
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()
