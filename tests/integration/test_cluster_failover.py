"""Kill -9 one of three nodes while real clients (Java, librdkafka, kafka-python) consume in groups and commit:
its partitions have live owners within 3 s (its session lock ends its lease at once), each group continues on
the other nodes within broker.session.timeout.ms + 3 s, no produced message is skipped
(each group consumes every one at least once), and no acknowledged commit is lost (what each group reads back
is at least every commit its members saw acknowledged). The scenario: tests/clients/failover.py."""

from __future__ import annotations

import pytest

from tests.clients import create_topic
from tests.clients.failover import Failover
from tests.support.cluster import OFFSETS_PARTITIONS, ClusterNodes

pytestmark = pytest.mark.integration

TOPIC = "failover"
PARTITIONS = 6
PER_ROUND = 600
MEMBERS = {"java": 1, "confluent": 2, "kafka-python": 1}


def test_groups_continue_through_a_kill_9_with_nothing_skipped_or_lost(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    failover = Failover(cluster, TOPIC, PARTITIONS, MEMBERS, OFFSETS_PARTITIONS, per_round=PER_ROUND)
    try:
        cluster.start_all(3)
        create_topic(cluster.bootstrap(), TOPIC, PARTITIONS)
        cluster.settled({1, 2, 3})
        sent = failover.start_groups()
        victim, continued = failover.kill_and_continue(sent)
        print("continued", continued, failover.timeline)
        for node_id in cluster.running():
            assert node_id != victim and cluster.nodes[node_id].stop() == 0
    finally:
        failover.kill_members()
        cluster.close()
