"""Cooperative rebalancing (KIP-429) against our server, for every client that has the cooperative-sticky
assignor: Java (CooperativeStickyAssignor), confluent-kafka and kcat (librdkafka
partition.assignment.strategy=cooperative-sticky), kafka-python (CooperativeStickyAssignor). aiokafka and
kafkajs have none: n/a.

A group of 3 splits a 6-partition topic; one member stops cleanly (LeaveGroup). The two others must keep every
partition they owned: no revocation of any of them (only incremental additions of the leaver's partitions),
then consume every new record exactly once. Cells: `cooperative` in docs/COMPATIBILITY.md.
"""

from __future__ import annotations

import pytest

from tests.clients import compat
from tests.clients.drivers import CLIENTS, run_consumer
from tests.clients.our_server import RestartableServer, describe_group
from tests.clients.process import ClientProcess
from tests.clients.produce import create_topic, produce
from tests.clients.scenarios import assert_exactly_once, stop_all, wait_consumed, wait_stable

PARTITIONS = 6


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = RestartableServer(str(tmp_path_factory.mktemp("ours-cooperative") / "data"))
    try:
        yield server
    finally:
        code = server.close()
    assert code == 0, f"server exited with {code}; log tail:\n  {server.tail()}"


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_cooperative_member_leaves_others_keep_partitions(client, server):
    topic, group = f"coop-{client}", f"coop-group-{client}"
    members: list[ClientProcess] = []
    try:
        with compat.record(client, "cooperative"):
            create_topic(server.bootstrap, topic, PARTITIONS)
            members = [run_consumer(client, server.bootstrap, group, topic, assignor="cooperative-sticky")
                       for _ in range(3)]
            wait_stable(members, topic, PARTITIONS)
            leaver, rest = members[0], members[1:]
            before = {m.name: m.assignment for m in rest}
            seen = {m.name: len(m.of("revoked")) for m in rest}
            orphaned = leaver.assignment
            stop_all([leaver])
            wait_stable(rest, topic, PARTITIONS, timeout=40)
            for m in rest:
                revoked = {tuple(tp) for e in m.of("revoked")[seen[m.name]:] for tp in e["partitions"]}
                assert not revoked & before[m.name], \
                    f"{m.name} had {sorted(revoked & before[m.name])} revoked\n{m.describe()}"
                assert before[m.name] <= m.assignment, f"{m.name} lost partitions\n{m.describe()}"
            assert orphaned <= set().union(*(m.assignment for m in rest))
            state, assigned = describe_group(server.current, group)
            assert state == "Stable" and sorted(map(sorted, assigned.values())) == sorted(
                sorted(m.assignment) for m in rest), f"DescribeGroups: {state} {assigned}"
            sent = produce(server.bootstrap, topic, PARTITIONS, 60)
            wait_consumed(rest, 60)
            assert_exactly_once(rest, sent)
            stop_all(rest)
    finally:
        for m in members:
            m.kill()
