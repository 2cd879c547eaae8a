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
        owners = {key: owner for key, (owner, _epoch) in cluster.settled({1, 2, 3}).items()}

        def agreed() -> tuple | None:
            """What every node tells clients, once they all tell the same and name the owners as leaders
            (each node's view follows PostgreSQL a refresh behind)."""
            views = [view_of(node) for node in nodes]
            leaders = {(name, p): leader for name, p, code, leader in views[0][2] if code == ErrorCode.none}
            return views[0] if views[0] == views[1] == views[2] and leaders == owners else None

        brokers, controller, leaders, coordinators = wait_until(agreed, 10, "every node tells clients the same")
        assert brokers == sorted((n, cluster.nodes[n].host, cluster.nodes[n].port) for n in (1, 2, 3))
        assert controller in (1, 2, 3)
        assert all(code == ErrorCode.none for code, _ in coordinators)
        assert len(leaders) == len(owners)  # every partition has a leader

        victim = max((1, 2, 3), key=lambda n: sum(owner == n for owner in owners.values()))
        others = {1, 2, 3} - {victim}
        stopping = time.monotonic()
        assert cluster.nodes[victim].stop() == 0  # SIGTERM: hand off, deregister, exit 0
        cluster.settled(others, timeout=5)
        assert time.monotonic() - stopping < SESSION_MS / 1000 / 2
        assert cluster.live_nodes() == others

        cluster.start(victim)
        again = cluster.settled({1, 2, 3})  # the restarted node takes its share again
        assert any(owner == victim for owner, _epoch in again.values())
        wait_until(lambda: all(len(view_of(cluster.nodes[n])[0]) == 3 for n in (1, 2, 3)), 10,
                   "every node lists the restarted node")
        for node_id in (1, 2, 3):
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()
