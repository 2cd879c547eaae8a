"""A cluster on a PostgreSQL that fails over, for the PostgreSQL HA tests (tests/integration/test_cluster_pg_*.py).

`ha_cluster(tmp_path)`: a primary with a synchronous streaming-replication standby (tests/support/postgres.py), two
nodes whose storage.url lists both hosts, the primary first, with target_session_attrs=read-write (no address
moves), and real clients (`Clients`, confluent-kafka) committing offsets and producing with acks=all.
`check_nothing_acknowledged_lost` reads back through the cluster; `established_to` counts a process's TCP
connections to a port.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from tests.clients.produce import create_topic
from tests.clients.txn_scenarios import read_output
from tests.support.cluster import ClusterNodes, wait_until
from tests.support.postgres import PostgresServer, server_or_skip

TOPIC = "ha"
PARTITIONS = 3  # txn_scenarios.read_output reads 3 partitions
GROUP = "ha-commits"
PASSWORD = "hunter2-secret"  # trust authentication ignores it; the nodes must never log it
RUN_AFTER_RESUME_S = 2.0


class Clients:
    """A committer (synchronous OffsetCommits of an increasing offset to every partition) and a producer
    (acks=all, idempotent), each in a thread, recording what was acknowledged and when."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.commits: list[tuple[float, int]] = []  # (monotonic time, offset) acknowledged
        self.attempted = 0  # the highest offset a commit was sent for
        self.delivered: list[tuple[float, str]] = []  # (monotonic time, value) acknowledged
        self.failed_deliveries = 0
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self.commit_loop, daemon=True),
                        threading.Thread(target=self.produce_loop, daemon=True)]

    def commit_loop(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP, "enable.auto.commit": False})
        try:
            offset = 0
            while not self.done.is_set():
                offset += 1
                self.attempted = offset
                try:
                    answer = consumer.commit(offsets=[TopicPartition(TOPIC, p, offset) for p in range(PARTITIONS)],
                                             asynchronous=False)
                except KafkaException:
                    time.sleep(0.05)
                    continue
                if answer and all(tp.error is None for tp in answer):
                    self.commits.append((time.monotonic(), offset))
                time.sleep(0.01)
        finally:
            consumer.close()

    def produce_loop(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5, "message.timeout.ms": 120_000})

        def report(err, msg) -> None:
            if err is None:
                self.delivered.append((time.monotonic(), msg.value().decode()))
            else:
                self.failed_deliveries += 1

        number = 0
        while not self.done.is_set():
            producer.produce(TOPIC, value=str(number).encode(), partition=number % PARTITIONS, on_delivery=report)
            number += 1
            producer.poll(0.02)
        assert producer.flush(120) == 0, "the producer could not deliver its last records"

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join(180)
        assert not any(thread.is_alive() for thread in self.threads)

    def resumed_after(self, moment: float) -> bool:
        """Whether a commit and a delivery were acknowledged after `moment`."""
        return self.commits[-1][0] > moment and self.delivered[-1][0] > moment

    def outage(self, failed: float) -> tuple[float, float]:
        """The longest time without an acknowledged commit, and without a delivery, from before the failure to
        after it (an answer sent just before the failure may be seen just after it)."""
        def gap(times: list[float]) -> float:
            return max(later - earlier for earlier, later in zip(times, times[1:]) if later > failed)

        return gap([t for t, _ in self.commits]), gap([t for t, _ in self.delivered])

    def first_after(self, moment: float) -> tuple[float, float]:
        """When the first commit and the first delivery acknowledged after `moment` were seen."""
        return min(t for t, _ in self.commits if t > moment), min(t for t, _ in self.delivered if t > moment)


class HaCluster(NamedTuple):
    primary: PostgresServer
    standby: PostgresServer
    cluster: ClusterNodes
    clients: Clients


@contextmanager
def ha_cluster(tmp_path: Path, **settings: str) -> Iterator[HaCluster]:
    """Two nodes (with `settings` over ClusterNodes' own) on a primary with a synchronous standby, clients
    committing and producing (20 of each done); everything stopped afterwards."""
    primary = server_or_skip().start()
    standby: PostgresServer | None = None
    cluster: ClusterNodes | None = None
    clients: Clients | None = None
    try:
        standby = primary.standby()
        database = primary.new_database().rsplit("/", 1)[1]
        url = (f"postgresql://postgres:{PASSWORD}@127.0.0.1:{primary.port},127.0.0.1:{standby.port}/{database}"
               "?target_session_attrs=read-write")
        cluster = ClusterNodes(url, tmp_path, **settings)
        cluster.start_all(2)
        create_topic(cluster.bootstrap(), TOPIC, PARTITIONS)
        cluster.settled({1, 2})
        clients = Clients(cluster.bootstrap())
        clients.start()
        running = clients
        wait_until(lambda: len(running.commits) >= 20 and len(running.delivered) >= 20, 60, "commits and produces")
        yield HaCluster(primary, standby, cluster, clients)
    finally:
        if clients is not None:
            clients.done.set()
        if cluster is not None:
            cluster.close()
        if standby is not None:
            standby.stop()
        primary.stop()


def check_nothing_acknowledged_lost(ha: HaCluster) -> None:
    """Every acknowledged commit and delivery is there (read through the cluster, on the promoted standby); both
    nodes are alive, stop cleanly, never logged the URL's password, and saw their session end."""
    clients, cluster = ha.clients, ha.cluster
    acknowledged = max(offset for _, offset in clients.commits)
    stored = committed(cluster.bootstrap())
    assert all(acknowledged <= offset <= clients.attempted for offset in stored.values()), \
        (stored, acknowledged, clients.attempted)
    delivered = {value for _, value in clients.delivered}
    read = read_output(cluster.bootstrap(), TOPIC, "read_uncommitted", len(delivered))
    missing = delivered - {value for values in read.values() for value in values}
    assert not missing, f"{len(missing)} acknowledged records lost: {sorted(missing, key=int)[:10]}"

    for node_id in (1, 2):
        node = cluster.nodes[node_id]
        assert node.process.poll() is None, f"node {node_id} died"
        assert node.stop() == 0
        assert not [line for line in node.lines if PASSWORD in line]
        assert node.events("cluster.session_ended"), "the node's session did not end with the primary"


def committed(bootstrap: str) -> dict[int, int]:
    """The group's committed offsets, read by a consumer that does not join it."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": f"check-{uuid.uuid4()}"})
    try:
        answer = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in answer}


def established_to(pid: int, port: int) -> int:
    """How many TCP connections process `pid` holds open (ESTABLISHED) to 127.0.0.1:`port`."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    count = 0
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote_port, state, inode = int(fields[2].rpartition(":")[2], 16), fields[3], fields[9]
        count += remote_port == port and state == "01" and inode in inodes
    return count
