"""Kill -9 one of three nodes while real clients (Java, librdkafka, kafka-python) consume in groups and commit:
each group continues on the other nodes within broker.session.timeout.ms + 3 s, no produced message is skipped
(each group consumes every one at least once), and no acknowledged commit is lost (what each group reads back
is at least every commit its members saw acknowledged)."""

from __future__ import annotations

import threading
import time

import pytest

from storage.placement import OFFSETS_TOPIC, partition_for
from tests.clients import committed_offsets, create_topic, produce, run_consumer
from tests.clients.process import ClientProcess, wait_all
from tests.clients.scenarios import stop_all, wait_stable
from tests.support.cluster import OFFSETS_PARTITIONS, ClusterNodes, wait_until

pytestmark = pytest.mark.integration

TOPIC = "failover"
PARTITIONS = 6
PER_ROUND = 600
MEMBERS = {"java": 1, "confluent": 2, "kafka-python": 1}
SLACK_SECONDS = 3.0  # the bound: groups continue within broker.session.timeout.ms + 3 s


def acknowledged(members: list[ClientProcess]) -> dict[int, int]:
    """The highest commit per partition that a member of the group saw acknowledged."""
    best: dict[int, int] = {}
    for member in members:
        for (topic, partition), offset in member.committed.items():
            if topic == TOPIC:
                best[partition] = max(offset, best.get(partition, -1))
    return best


def consumed_values(members: list[ClientProcess]) -> set[str]:
    return {r["value"] for m in members for r in m.records if r["topic"] == TOPIC}


def test_groups_continue_through_a_kill_9_with_nothing_skipped_or_lost(pg_url, tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    groups: dict[str, list[ClientProcess]] = {}
    try:
        cluster.start_all(3)
        create_topic(cluster.bootstrap(), TOPIC, PARTITIONS)
        cluster.settled({1, 2, 3})
        for client, count in MEMBERS.items():
            groups[f"failover-{client}"] = [run_consumer(client, cluster.bootstrap(), f"failover-{client}", TOPIC)
                                            for _ in range(count)]
        for members in groups.values():
            wait_stable(members, TOPIC, PARTITIONS)
        sent = produce(cluster.bootstrap(), TOPIC, PARTITIONS, PER_ROUND)
        for name, members in groups.items():
            wait_all(members, lambda m=members: all(acknowledged(m).get(p, -1) >= PER_ROUND // PARTITIONS
                                                    for p in range(PARTITIONS)), 60, f"{name} committed round 1")

        # the victim coordinates at least one group
        owners = cluster.owners()
        coordinators = {name: owners[(OFFSETS_TOPIC, partition_for(name, OFFSETS_PARTITIONS))][0] for name in groups}
        victim = max(cluster.running(), key=lambda n: sum(c == n for c in coordinators.values()))
        assert victim in coordinators.values()
        before = {name: acknowledged(members) for name, members in groups.items()}
        survivors = [n for n in cluster.running() if n != victim]

        killed_at = time.monotonic()
        cluster.kill(victim)
        round_two: dict[int, list[str]] = {}
        producer = threading.Thread(target=lambda: round_two.update(
            produce(cluster.bootstrap(*survivors), TOPIC, PARTITIONS, PER_ROUND, start=PER_ROUND, timeout=60)))
        producer.start()
        continued: dict[str, float] = {}
        deadline = killed_at + cluster.session_seconds + SLACK_SECONDS + 30
        while len(continued) < len(groups) and time.monotonic() < deadline:
            for name, members in groups.items():
                now_acked = acknowledged(members)
                if name not in continued and any(now_acked.get(p, -1) > before[name].get(p, -1)
                                                 for p in range(PARTITIONS)):
                    continued[name] = time.monotonic() - killed_at
            time.sleep(0.05)
        producer.join(90)
        assert not producer.is_alive() and len(round_two) == PARTITIONS, "round 2 was not delivered"
        bound = cluster.session_seconds + SLACK_SECONDS
        assert set(continued) == set(groups) and max(continued.values()) <= bound, \
            f"groups continued after {continued} s (bound {bound} s, victim node {victim} coordinated " \
            f"{[n for n, c in coordinators.items() if c == victim]})"

        everything = {v for values in [*sent.values(), *round_two.values()] for v in values}
        print("continued", continued)
        for name, members in groups.items():
            try:
                wait_until(lambda m=members: everything <= consumed_values(m), 60, f"{name} consumed both rounds")
            except AssertionError:
                missing = everything - consumed_values(members)
                by_partition = {p: len([v for v in missing if int(v) % PARTITIONS == p]) for p in range(PARTITIONS)}
                raise AssertionError(f"{name} missing {by_partition}, owners {cluster.owners()}\n"
                                     + "\n".join(m.describe(events=20) for m in members)) from None
        final_acks = {name: acknowledged(members) for name, members in groups.items()}
        for members in groups.values():
            stop_all(members)
        for name in groups:
            stored = committed_offsets(cluster.bootstrap(), name, TOPIC, PARTITIONS)
            lost = {p: (stored[p], acked) for p, acked in final_acks[name].items() if stored[p] < acked}
            assert not lost, f"{name}: acknowledged commits lost (stored, acknowledged): {lost}"
        for node_id in survivors:
            assert cluster.nodes[node_id].stop() == 0
    finally:
        for members in groups.values():
            for member in members:
                member.kill()
        cluster.close()
