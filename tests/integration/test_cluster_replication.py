"""Replication factor 3 on a 3-node cluster, with real clients: librdkafka's AdminClient creates RF-3 topics (RF 4
is refused with Kafka's error), Metadata names three replicas and ISR per partition, the owner first (so does
__transaction_state, created with transaction.state.log.replication.factor 3); a transactional producer and a
read_committed consumer (Java kafka-clients, confluent-kafka) process exactly once on them; a dead node leaves
the lists, and then RF 3 cannot be reached (CreateTopics, CreatePartitions)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from rules.placement import TRANSACTION_STATE_TOPIC
from tests.clients.txn_scenarios import PARTITIONS, aborts_and_exactly_once
from tests.support.cluster import ClusterNodes, wait_until

pytestmark = pytest.mark.integration

NODES = {1, 2, 3}


@pytest.fixture(scope="module")
def cluster(postgres_server, tmp_path_factory):
    nodes = ClusterNodes(postgres_server.new_database(), tmp_path_factory.mktemp("rf3"),
                         **{"transaction.state.log.num.partitions": "4"})
    try:
        nodes.start_all(3)
        nodes.settled(NODES)  # every node sees the three: a node still seeing two refuses factor 3 (as Kafka would)
        yield nodes
        for node_id in nodes.running():
            assert nodes.nodes[node_id].stop() == 0
    finally:
        nodes.close()


def create(bootstrap: str, name: str, partitions: int, factor: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, factor)], operation_timeout=20)[name].result(30)


def refused(call) -> tuple[str, str]:
    """The error name and message of an admin call that fails."""
    with pytest.raises(KafkaException) as raised:
        call()
    error = raised.value.args[0]
    return error.name(), error.str()


def replicas(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """(leader, replicas, ISR) per partition, as librdkafka's Metadata reads them."""
    found = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=15).topics[topic]
    assert found.error is None, found.error
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in found.partitions.values()}


def led_by_owner_with_all(listed: dict[int, tuple[int, list[int], list[int]]], live: set[int]) -> bool:
    """Every partition led by its first replica, the replicas = the ISR = the live nodes. While a dead node's
    partitions are taken over, Metadata answers them LEADER_NOT_AVAILABLE with no replicas: not yet."""
    return bool(listed) and all(nodes and leader == nodes[0] and nodes == isr and set(nodes) == live
                                for leader, nodes, isr in listed.values())


@pytest.mark.parametrize("client", ["java", "confluent"])
def test_rf3_topics_carry_transactions_read_committed(cluster, client):
    bootstrap = cluster.bootstrap()
    names = {"input": f"rf3-in-{client}", "output": f"rf3-out-{client}", "group": f"rf3-group-{client}",
             "txn": f"rf3-txn-{client}"}
    for topic in (names["input"], names["output"]):
        create(bootstrap, topic, PARTITIONS, 3)
    cluster.settled(NODES)
    for topic in (names["input"], names["output"]):
        assert led_by_owner_with_all(replicas(bootstrap, topic), NODES), replicas(bootstrap, topic)
    aborts_and_exactly_once(client, bootstrap, names)
    assert led_by_owner_with_all(replicas(bootstrap, TRANSACTION_STATE_TOPIC), NODES)


def test_a_factor_above_the_live_nodes_is_refused_and_a_dead_node_leaves_the_replicas(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        cluster.start_all(3)
        cluster.settled(NODES)  # the node answering may not have seen the third yet: it would count two
        bootstrap = cluster.bootstrap()
        assert refused(lambda: create(bootstrap, "rf4", 2, 4)) == (
            "INVALID_REPLICATION_FACTOR", "Unable to replicate the partition 4 time(s): The target replication "
            "factor of 4 cannot be reached because only 3 broker(s) are registered.")
        create(bootstrap, "rf3", 4, 3)
        cluster.settled(NODES)
        # settled is PostgreSQL's view; the node answering Metadata may learn of the new topic's owners a moment later
        # (LEADER_NOT_AVAILABLE meanwhile, as a new topic's partitions are on Kafka before their leaders are known)
        wait_until(lambda: led_by_owner_with_all(replicas(bootstrap, "rf3"), NODES), 15, "replicas and ISR of rf3")

        cluster.kill(3)
        cluster.settled({1, 2})
        bootstrap = cluster.bootstrap(1, 2)
        wait_until(lambda: led_by_owner_with_all(replicas(bootstrap, "rf3"), {1, 2}), 15,
                   "replicas and ISR of the live nodes only")
        assert refused(lambda: create(bootstrap, "late", 2, 3))[0] == "INVALID_REPLICATION_FACTOR"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        assert refused(lambda: admin.create_partitions([NewPartitions("rf3", 6)])["rf3"].result(30)) == (
            "INVALID_REPLICATION_FACTOR",
            "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered.")
        create(bootstrap, "rf2", 2, 2)
        for node_id in cluster.running():
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()
