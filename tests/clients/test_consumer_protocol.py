"""KIP-848 consumer groups (group.protocol=consumer) with the clients that speak it: the Java client (kafka-clients
3.9.1) and confluent-kafka (librdkafka 2.16). kafka-python, aiokafka, kafkajs and kcat have no consumer protocol:
n/a in docs/COMPATIBILITY.md.

One scenario per client, against our server on its embedded defaults but a 1 s heartbeat interval (so that the
group settles in seconds): two then three members share a 6-partition topic without overlap; a leaver's partitions
move; the server is killed (SIGKILL) and restarted on the same log dir while the members run, and they carry on
with their partitions; every record is consumed exactly once across all of it and the committed offsets end at the
log end; the client's own Admin describes the group as a `consumer` group. A second scenario: a subscription to a
topic that does not exist yet gets its partitions once the topic is created; and (Java) a static member restarted
with the same group.instance.id keeps its partitions.
"""

from __future__ import annotations

import time

import pytest

from tests.clients import compat
from tests.clients.admin import admin_client
from tests.clients.drivers import CLIENTS as ALL_CLIENTS, run_consumer
from tests.clients.our_server import RestartableServer
from tests.clients.process import ClientProcess
from tests.clients.produce import committed_offsets, create_topic, produce
from tests.clients.scenarios import assert_exactly_once, stop_all, wait_committed, wait_consumed, wait_stable

PARTITIONS = 6
CLIENTS = ("confluent", "java")
CONSUMER = {"group.protocol": "consumer"}
FAST = {"group.consumer.heartbeat.interval.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "1000"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = RestartableServer(str(tmp_path_factory.mktemp("ours-848") / "data"), FAST)
    try:
        yield server
    finally:
        code = server.close()
    assert code == 0, f"server exited with {code}; log tail:\n  {server.tail()}"


for _other in sorted(set(ALL_CLIENTS) - set(CLIENTS)):
    compat.mark(_other, ("consumer-protocol",), "n/a", "the client has no consumer protocol (KIP-848)")


def merged(*rounds: dict[int, list[str]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for sent in rounds:
        for p, values in sent.items():
            out.setdefault(p, []).extend(values)
    return out


@pytest.mark.parametrize("client", CLIENTS)
def test_consumer_protocol_group_shares_moves_survives_a_crash_and_is_described(client, server):
    topic, group = f"k848-{client}", f"k848-group-{client}"
    members: list[ClientProcess] = []
    try:
        with compat.record(client, "consumer-protocol"):
            create_topic(server.bootstrap, topic, PARTITIONS)
            members = [run_consumer(client, server.bootstrap, group, topic, extra=CONSUMER) for _ in range(2)]
            wait_stable(members, topic, PARTITIONS)
            rounds = [produce(server.bootstrap, topic, PARTITIONS, 120)]
            wait_consumed(members, 120)
            members.append(run_consumer(client, server.bootstrap, group, topic, extra=CONSUMER))
            wait_stable(members, topic, PARTITIONS)
            rounds.append(produce(server.bootstrap, topic, PARTITIONS, 120, start=120))
            wait_consumed(members, 240)
            described = admin_client(client, server.bootstrap).describe(group)
            assert described.group_type == "consumer" and described.state == "Stable", described
            assert sorted(map(sorted, described.members.values())) == sorted(sorted(m.assignment) for m in members)
            leaver, members = members[0], members[1:]
            stop_all([leaver])
            wait_stable(members, topic, PARTITIONS)
            assert leaver.assignment <= set().union(*(m.assignment for m in members))
            rounds.append(produce(server.bootstrap, topic, PARTITIONS, 120, start=240))
            wait_consumed(members, 360 - len(leaver.records))  # the leaver's count stays with it
            before = {m.name: m.assignment for m in members}
            server.crash_and_restart()  # SIGKILL: the members keep running
            rounds.append(produce(server.bootstrap, topic, PARTITIONS, 120, start=360))
            wait_consumed(members, 480 - len(leaver.records))
            assert {m.name: m.assignment for m in members} == before  # no rebalance: the group was replayed
            everyone = [leaver, *members]
            assert_exactly_once(everyone, merged(*rounds))
            ends = {p: 80 for p in range(PARTITIONS)}
            wait_committed(members, topic, ends, server_log=server.current.lines)
            stop_all(members)
            assert committed_offsets(server.bootstrap, group, topic, PARTITIONS) == ends
    finally:
        for m in members:
            m.kill()


@pytest.mark.parametrize("client", CLIENTS)
def test_consumer_protocol_subscription_to_a_topic_created_later(client, server):
    topic, group = f"k848-later-{client}", f"k848-later-group-{client}"
    # not created by the subscription itself (the Java client's allow.auto.create.topics defaults to true)
    member = run_consumer(client, server.bootstrap, group, topic,
                          extra={**CONSUMER, "allow.auto.create.topics": "false"})
    try:
        time.sleep(3)  # the member is in the group, subscribed to nothing that exists
        assert member.assignment == set()
        create_topic(server.bootstrap, topic, 3)
        wait_stable([member], topic, 3)
        sent = produce(server.bootstrap, topic, 3, 30)
        wait_consumed([member], 30)
        assert_exactly_once([member], sent)
        stop_all([member])
    finally:
        member.kill()


def test_java_static_member_restarted_keeps_its_partitions(server):
    topic, group = "k848-static", "k848-static-group"
    create_topic(server.bootstrap, topic, PARTITIONS)
    first = [run_consumer("java", server.bootstrap, group, topic, instance_id=f"i-{n}", extra=CONSUMER)
             for n in range(2)]
    again: ClientProcess | None = None
    try:
        wait_stable(first, topic, PARTITIONS)
        kept = first[0].assignment
        stop_all([first[0]])  # a static member's close leaves with epoch -2: its partitions wait for it
        again = run_consumer("java", server.bootstrap, group, topic, instance_id="i-0", extra=CONSUMER)
        wait_stable([again, first[1]], topic, PARTITIONS)
        assert again.assignment == kept
        assert first[1].of("revoked") == [] or all(not e["partitions"] for e in first[1].of("revoked"))
        stop_all([again, first[1]])
    finally:
        for m in [*first, *([again] if again else [])]:
            m.kill()
