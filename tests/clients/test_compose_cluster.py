"""The cluster profile's client suite, run INSIDE the test container against three coordinator containers on one
PostgreSQL container (docker-compose.yml profile `cluster`, `./dev compose-test`, docs/CLUSTER.md).

Skipped unless COMPOSE_SIGNALS names the directory shared with `./dev compose-test`: a container cannot kill
another, so the test asks the script to (`kill` holds the node id; the script answers with `killed` once
`podman kill -s KILL` returned). Checked with confluent-kafka and kafka-python groups: every node answers the
health probe, the partitions settle on the three nodes, then one node is killed mid-run while the groups consume
and commit (tests/clients/failover.py: the groups continue within broker.session.timeout.ms + 3 s, nothing skipped,
no acknowledged commit lost).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.clients import create_topic
from tests.clients.failover import KAFKA_PYTHON_CONNECT_HANG_SECONDS, Failover
from tests.support.cluster import ClusterDatabase, wait_until

SIGNALS = os.environ.get("COMPOSE_SIGNALS", "")
pytestmark = pytest.mark.skipif(not SIGNALS, reason="COMPOSE_SIGNALS not set (run by ./dev compose-test)")
NODES = {int(name[4]): name for name in os.environ.get("COORDINATOR_BOOTSTRAP", "").split(",") if name}
RUN = os.environ.get("COMPOSE_RUN_ID", "compose")
PARTITIONS = 6


class ComposeCluster(ClusterDatabase):
    """The node containers nodeN:1909N (node.id N), killed by `./dev compose-test` on request."""

    def __init__(self) -> None:
        super().__init__(os.environ["COORDINATOR_STORAGE_URL"])
        self.session_seconds = int(os.environ.get("COMPOSE_SESSION_TIMEOUT_MS", "9000")) / 1000
        self.killed: set[int] = set()

    def running(self) -> list[int]:
        return [n for n in NODES if n not in self.killed]

    def bootstrap(self, *node_ids: int) -> str:
        return ",".join(NODES[n] for n in node_ids or self.running())

    def kill(self, node_id: int) -> None:
        signals = Path(SIGNALS)
        (signals / "kill.tmp").write_text(str(node_id))
        (signals / "kill.tmp").rename(signals / "kill")
        wait_until(lambda: (signals / "killed").exists(), 30, f"./dev compose-test killed node {node_id}")
        self.killed.add(node_id)

    def offsets_partitions(self) -> int:
        rows = self.query("SELECT value FROM kc_cluster WHERE name = 'offsets.topic.num.partitions'")
        return int(rows[0]["value"])


def pin_addresses(names: list[str]) -> None:
    """Resolve the nodes' names once and pin them in /etc/hosts, so that a killed node's name keeps resolving to
    its address -- which then drops every packet -- as it does for a client with a DNS cache, a Kubernetes pod's
    IP, or a compose network whose DNS is slow to forget the container (seen in CI). Without the pin the compose
    DNS may forget the name at once, and clients would fail fast instead of hanging in connect."""
    lines = [f"{socket.gethostbyname(name)} {name}\n" for name in names]
    with open("/etc/hosts", "a") as hosts:
        hosts.writelines(lines)


def test_groups_continue_when_a_node_container_is_killed():
    # PostgreSQL's name too: the test reads the owners from it while a container dies, and a compose DNS that
    # answers slowly then ("Temporary failure in name resolution", seen in a CI run) must not fail the observer
    pin_addresses([name.split(":")[0] for name in NODES.values()]
                  + [urlsplit(os.environ["COORDINATOR_STORAGE_URL"]).hostname or "postgres"])
    cluster = ComposeCluster()
    wait_until(lambda: cluster.live_nodes() == set(NODES), 60, "every node registered")  # ./dev waited healthy
    topic = f"compose-cluster-{RUN}"
    create_topic(cluster.bootstrap(), topic, PARTITIONS)
    cluster.settled(set(NODES), timeout=60)
    failover = Failover(cluster, topic, PARTITIONS, {"confluent": 2, "kafka-python": 1},
                        cluster.offsets_partitions(), per_round=300, prefix=f"compose-cluster-{RUN}",
                        connect_hang_seconds=KAFKA_PYTHON_CONNECT_HANG_SECONDS)  # the pinned address drops packets
    try:
        sent = failover.start_groups()
        victim, continued = failover.kill_and_continue(sent)
        print(f"node {victim} killed; groups continued after {continued} s; {failover.timeline}")
    finally:
        failover.kill_members()
