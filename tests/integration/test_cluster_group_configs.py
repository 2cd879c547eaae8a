"""Group configs in cluster mode live in PostgreSQL (kc_group_configs): set through one node with confluent-kafka's
AdminClient, another node describes them at once (NOTIFY), a share group whose coordinator may be either node
runs with them (share.auto.offset.reset=earliest: a ShareConsumer gets what was produced before it joined), and
after both nodes restart they are still there; a node's old group-configs.json is not what it serves."""

from __future__ import annotations

import json

from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from tests.clients import create_topic
from tests.support.cluster import ClusterNodes, wait_until
from tests.support.share_clients import FAST_SHARE, alter_group_configs, poll_until, produce, share_consumer


def described(bootstrap: str, group: str) -> dict[str, tuple[str, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    return {name: (entry.value, entry.source) for name, entry in future.result(15).items()}


def test_group_configs_are_shared_by_every_node_and_survive_their_restarts(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path, **FAST_SHARE)
    consumer = None
    try:
        cluster.start_all(2)
        (tmp_path / "node2" / "group-configs.json").write_text(json.dumps(  # what a node kept before: not served
            {"version": 1, "groups": {"sg": {"share.isolation.level": "read_committed"}}}))
        create_topic(cluster.bootstrap(), "q", 2)
        produce(cluster.bootstrap(), "q", [f"m{i}".encode() for i in range(10)], partition=0)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap(1)})
        alter_group_configs(admin, "sg", **{"share.auto.offset.reset": "earliest"})
        group = ConfigSource.GROUP_CONFIG.value
        wait_until(lambda: described(cluster.bootstrap(2), "sg")["share.auto.offset.reset"] == ("earliest", group),
                   10, "node 2 describing what node 1 set")
        assert cluster.query("SELECT group_id, name, value FROM kc_group_configs") == [
            {"group_id": "sg", "name": "share.auto.offset.reset", "value": "earliest"}]
        consumer = share_consumer(cluster.bootstrap(), "sg", ["q"])
        got = poll_until(consumer, lambda got: len(got) >= 10)
        assert sorted(m.offset() for m in got) == list(range(10))  # earliest, wherever its coordinator runs
        consumer.close()
        consumer = None

        for node_id in (1, 2):
            assert cluster.nodes[node_id].stop() == 0
        cluster.start_all(2)
        for node_id in (1, 2):
            found = described(cluster.bootstrap(node_id), "sg")
            assert found["share.auto.offset.reset"] == ("earliest", group)
            assert found["share.isolation.level"] == ("read_uncommitted", ConfigSource.DEFAULT_CONFIG.value)
    finally:
        if consumer is not None:
            consumer.close()
        cluster.close()
