"""The operations endpoint of cluster nodes: each node reports the offsets partitions it owns as loaded and
is ready; after a node is killed the survivor's metrics show its share loaded and it stays ready."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_ops_http import get, http_base
from tests.support.cluster import OFFSETS_PARTITIONS, ClusterNodes, wait_until

pytestmark = pytest.mark.integration
OFFSETS = "__consumer_offsets"


def loaded_partitions(base: str) -> float:
    status, body = get(base + "/metrics")
    assert status == 200
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == "kcoord_partitions" and sample.labels == {"state": "loaded"}:
                return sample.value
    raise AssertionError("no kcoord_partitions{state=loaded}")


def owned_by(owners: dict, node_id: int) -> int:
    return sum(1 for (topic, _p), (owner, _epoch) in owners.items() if topic == OFFSETS and owner == node_id)


def test_each_node_reports_its_share_and_the_survivor_takes_over(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path, **{"http.listener": "http://127.0.0.1:0"})
    try:
        nodes = cluster.start_all(2)
        bases = {n: http_base(node) for n, node in zip((1, 2), nodes)}
        owners = cluster.settled({1, 2})
        for node_id, base in bases.items():
            share = owned_by(owners, node_id)
            assert 0 < share < OFFSETS_PARTITIONS
            wait_until(lambda b=base, s=share: loaded_partitions(b) == s and get(b + "/health/ready")[0] == 200,
                       15, f"node {node_id}: {share} partitions loaded and ready")
        cluster.kill(2)
        cluster.settled({1})
        wait_until(lambda: loaded_partitions(bases[1]) == OFFSETS_PARTITIONS, 30, "node 1 loaded every partition")
        status, body = get(bases[1] + "/health/ready")
        assert status == 200, body
    finally:
        cluster.close()
