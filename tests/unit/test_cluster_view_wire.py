"""Metadata and FindCoordinator answer from the cluster view: every broker it lists, each
partition's leader and leader epoch (no leader -> LEADER_NOT_AVAILABLE / COORDINATOR_NOT_AVAILABLE);
LocalView keeps today's single-node answers and follows the node's advertised endpoint."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.cluster.view import NO_LEADER, Broker, LocalView
from coordinator.node import Node
from rules.placement import OFFSETS_TOPIC, partition_for, transaction_partition_for
from tests.support.dispatch import InProcess, make_services, named_request as req

E = ErrorCode
BROKERS = [Broker(1, "n1.test", 9001, None), Broker(2, "n2.test", 9002, "rack-b"), Broker(3, "n3.test", 9003, None)]
UNOWNED = 5  # the offsets partition no node owns now


class ThreeNodes:
    """A fake ClusterView: partition p of every topic is led by node p % 3 + 1 at epoch 10 + p."""

    def brokers(self) -> list[Broker]:
        return list(BROKERS)

    def controller_id(self) -> int:
        return 2

    def broker(self, node_id: int) -> Broker | None:
        return next((b for b in BROKERS if b.node_id == node_id), None)

    def leader(self, topic: str, partition: int) -> int:
        return NO_LEADER if partition == UNOWNED else partition % 3 + 1

    def leader_epoch(self, topic: str, partition: int) -> int:
        return 10 + partition

    def owns(self, topic: str, partition: int) -> bool:
        return self.leader(topic, partition) == 1


def group_on(partition: int) -> str:
    return next(f"g{i}" for i in range(10_000) if partition_for(f"g{i}", 50) == partition)


@pytest.fixture
def cluster():
    services = make_services()
    services.view = ThreeNodes()
    return InProcess(services)


@pytest.mark.parametrize("version", [1, 7, 12])
def test_metadata_lists_every_broker_and_each_partitions_leader(cluster, version):
    response = cluster.call(req("metadata", version, topics=None))
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(1, "n1.test", 9001), (2, "n2.test", 9002),
                                                                        (3, "n3.test", 9003)]
    assert response.controller_id == 2
    (topic,) = response.topics
    for p in topic.partitions:
        if p.partition_index == UNOWNED:
            assert (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes) == (E.leader_not_available, -1, (), ())
        else:
            leader = p.partition_index % 3 + 1
            assert (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes) == (E.none, leader, (leader,), (leader,))
        if version >= 7:
            assert p.leader_epoch == 10 + p.partition_index


def test_metadata_rack_comes_from_the_view(cluster):
    response = cluster.call(req("metadata", 12, topics=None))
    assert [b.rack for b in response.brokers] == [None, "rack-b", None]


@pytest.mark.parametrize("version", [0, 3])
def test_find_coordinator_names_the_owner_of_the_groups_partition(cluster, version):
    response = cluster.call(req("find_coordinator", version, key=group_on(7), key_type=0))
    assert (response.error_code, response.node_id, response.host, response.port) == (E.none, 2, "n2.test", 9002)
    response = cluster.call(req("find_coordinator", version, key=group_on(UNOWNED), key_type=0))
    assert (response.error_code, response.node_id, response.host, response.port) == (E.coordinator_not_available,
                                                                                      -1, "", -1)


def test_find_coordinator_batched_answers_each_key_with_its_owner(cluster):
    keys = [group_on(9), group_on(UNOWNED), group_on(10)]
    response = cluster.call(req("find_coordinator", 6, key_type=0, coordinator_keys=keys))
    assert [(c.key, c.error_code, c.node_id, c.host) for c in response.coordinators] == [
        (keys[0], E.none, 1, "n1.test"), (keys[1], E.coordinator_not_available, -1, ""),
        (keys[2], E.none, 2, "n2.test")]


def txn_id_on(partition: int) -> str:
    return next(f"t{i}" for i in range(10_000) if transaction_partition_for(f"t{i}", 50) == partition)


def test_find_coordinator_of_a_transactional_id_waits_for_the_transaction_state_topic():
    """Cluster mode: the first lookup of a transactional id creates __transaction_state (Kafka's
    auto-creation): COORDINATOR_NOT_AVAILABLE until it exists, then its partition's owner."""
    services = make_services()
    services.view = ThreeNodes()
    asked = []
    exists = [False]
    services.txn_topic = lambda: asked.append(1) or exists[0]
    cluster = InProcess(services)
    keys = [txn_id_on(7), txn_id_on(UNOWNED)]
    response = cluster.call(req("find_coordinator", 6, key_type=1, coordinator_keys=keys))
    assert [(c.error_code, c.node_id) for c in response.coordinators] == [(E.coordinator_not_available, -1)] * 2
    assert len(asked) == 2
    response = cluster.call(req("find_coordinator", 6, key_type=0, coordinator_keys=[group_on(7)]))
    assert response.coordinators[0].node_id == 2 and len(asked) == 2  # groups never ask
    exists[0] = True
    response = cluster.call(req("find_coordinator", 6, key_type=1, coordinator_keys=keys))
    assert [(c.error_code, c.node_id, c.host) for c in response.coordinators] == [
        (E.none, 2, "n2.test"), (E.coordinator_not_available, -1, "")]  # created, not owned yet
    response = cluster.call(req("find_coordinator", 3, key_type=1, key=txn_id_on(9)))
    assert (response.error_code, response.node_id) == (E.none, 1)


def test_local_view_is_this_node_everywhere_and_follows_its_advertised_endpoint():
    node = Node(4, "cid")
    view = LocalView(node)
    node.host, node.port = "late.test", 7777  # Node.advertise runs once the listener is bound
    assert view.brokers() == [Broker(4, "late.test", 7777, None)]
    assert (view.controller_id(), view.leader(OFFSETS_TOPIC, 3), view.leader_epoch("t", 0)) == (4, 4, 0)
    assert view.owns("t", 9) and view.broker(4) == Broker(4, "late.test", 7777, None) and view.broker(5) is None
