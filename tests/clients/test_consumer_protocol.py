"""KIP-848 consumer groups (group.protocol=consumer) with the clients that speak it: the Java client (kafka-clients
3.9.1) and confluent-kafka (librdkafka 2.16). kafka-python, aiokafka, kafkajs and kcat have no consumer protocol:
n/a in docs/COMPATIBILITY.md.

Against our server on its embedded defaults but a 1 s heartbeat interval (so that a group settles in seconds):

- two then three members share a 6-partition topic without overlap (from the clients' own rebalance callbacks); the
  client's Admin lists and describes a `consumer` group, Stable, server assignor `uniform`, each member's assignment
  and target as the clients hold them; a leaver's partitions move to the others;
- the server is SIGKILLed and restarted on the same log dir while the members run: they carry on with the same
  partitions and no rebalance callback at all (the group was replayed from __consumer_offsets);
- every record is consumed exactly once across all of it, and the committed offsets end at the log end. Exact, not
  "at least once": the drivers commit synchronously after each batch and on revocation, and the kill comes only once
  every record consumed so far is committed, so no record may come twice;
- a subscription to a topic that does not exist yet: the member is in the group (Stable, nothing assigned), then
  gets the partitions once the topic is created;
- a static member (group.instance.id) stopped and restarted keeps its partitions: while it is away the group keeps
  them for it, and the other member never gets them.
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

pytestmark = pytest.mark.integration

PARTITIONS = 6
PER_ROUND = 120  # records per round: 20 per partition
CLIENTS = ("confluent", "java")
CONSUMER = {"group.protocol": "consumer"}
FAST = {"group.consumer.heartbeat.interval.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "1000"}
FEATURES = ("consumer-protocol", "consumer-protocol-new-topic", "consumer-protocol-static")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = RestartableServer(str(tmp_path_factory.mktemp("ours-848") / "data"), FAST)
    try:
        yield server
    finally:
        code = server.close()
    assert code == 0, f"server exited with {code}; log tail:\n  {server.tail()}"


for _other in sorted(set(ALL_CLIENTS) - set(CLIENTS)):
    compat.mark(_other, FEATURES, "n/a", "the client has no consumer protocol (KIP-848)")


def merged(*rounds: dict[int, list[str]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for sent in rounds:
        for p, values in sent.items():
            out.setdefault(p, []).extend(values)
    return out


def log_ends(rounds: list[dict[int, list[str]]]) -> dict[int, int]:
    return {p: len(values) for p, values in merged(*rounds).items()}


def rebalance_events(member: ClientProcess, since: int) -> list[dict]:
    return [e for e in list(member.events)[since:] if e["event"] in ("assigned", "revoked")]


def wait_described(client: str, bootstrap: str, group: str, check, what: str, timeout: float = 30.0):
    """Describe the group with the client's Admin until check(described) holds."""
    admin = admin_client(client, bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        described = admin.describe(group)
        if check(described):
            return described
        assert time.monotonic() < deadline, f"{group}: {what} not described within {timeout:.0f}s: {described}"
        time.sleep(0.5)


def check_listed_and_described(client: str, bootstrap: str, group: str, members: list[ClientProcess]) -> None:
    """The client's own Admin: ConsumerGroupDescribe and ListGroups agree with what the members hold.

    Polled until Stable: the members' callbacks can show every partition owned once while the group still
    reconciles (a joiner got the partition one member freed, another member has yet to revoke its own)."""
    def owned() -> list[list[tuple[str, int]]]:
        return sorted(sorted(m.assignment) for m in members)

    described = wait_described(client, bootstrap, group,
                               lambda d: d.state == "Stable" and sorted(map(sorted, d.members.values())) == owned(),
                               "Stable with the assignments the members hold")
    assert (described.group_type, described.protocol) == ("consumer", "uniform"), described
    assert described.targets == described.members, described  # Stable: every member is at its target
    assert admin_client(client, bootstrap).list_groups_typed().get(group) == ("Stable", "consumer")


@pytest.mark.parametrize("client", CLIENTS)
def test_consumer_protocol_group_shares_moves_survives_a_crash_and_is_described(client, server):
    topic, group = f"k848-{client}", f"k848-group-{client}"
    members: list[ClientProcess] = []
    log = server.current.lines
    try:
        with compat.record(client, "consumer-protocol"):
            create_topic(server.bootstrap, topic, PARTITIONS)
            members = [run_consumer(client, server.bootstrap, group, topic, extra=CONSUMER) for _ in range(2)]
            wait_stable(members, topic, PARTITIONS)
            rounds = [produce(server.bootstrap, topic, PARTITIONS, PER_ROUND)]
            wait_consumed(members, PER_ROUND)
            members.append(run_consumer(client, server.bootstrap, group, topic, extra=CONSUMER))
            wait_stable(members, topic, PARTITIONS)
            rounds.append(produce(server.bootstrap, topic, PARTITIONS, PER_ROUND, start=PER_ROUND))
            wait_consumed(members, 2 * PER_ROUND)
            check_listed_and_described(client, server.bootstrap, group, members)

            leaver, members = members[0], members[1:]
            given_up = leaver.assignment  # its close revokes them all: taken before
            stop_all([leaver])
            wait_stable(members, topic, PARTITIONS)
            assert given_up and given_up <= set().union(*(m.assignment for m in members)), given_up
            rounds.append(produce(server.bootstrap, topic, PARTITIONS, PER_ROUND, start=2 * PER_ROUND))
            wait_consumed(members, 3 * PER_ROUND - len(leaver.records))  # the leaver's count stays with it
            # Everything consumed is committed before the kill: nothing may be consumed twice after it.
            wait_committed(members, topic, log_ends(rounds), server_log=log)

            before = {m.name: m.assignment for m in members}
            seen = {m.name: len(m.events) for m in members}
            server.crash_and_restart()  # SIGKILL: the members keep running
            log = server.current.lines
            rounds.append(produce(server.bootstrap, topic, PARTITIONS, PER_ROUND, start=3 * PER_ROUND))
            wait_consumed(members, 4 * PER_ROUND - len(leaver.records))
            ends = log_ends(rounds)
            wait_committed(members, topic, ends, server_log=log)
            assert {m.name: m.assignment for m in members} == before
            assert {m.name: rebalance_events(m, seen[m.name]) for m in members} == {m.name: [] for m in members}
            assert_exactly_once([leaver, *members], merged(*rounds))

            stop_all(members)
            assert_exactly_once([leaver, *members], merged(*rounds))  # the shutdown re-read nothing
            assert committed_offsets(server.bootstrap, group, topic, PARTITIONS) == ends
            assert admin_client("confluent", server.bootstrap).list_offsets(topic, PARTITIONS, "latest") == ends
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
        with compat.record(client, "consumer-protocol-new-topic"):
            described = wait_described(client, server.bootstrap, group, lambda d: d.members, "a member")
            assert (described.state, list(described.members.values())) == ("Stable", [set()]), described
            assert member.assignment == set()
            create_topic(server.bootstrap, topic, 3)
            wait_stable([member], topic, 3)
            sent = produce(server.bootstrap, topic, 3, 30)
            wait_consumed([member], 30)
            assert_exactly_once([member], sent)
            stop_all([member])
    finally:
        member.kill()


@pytest.mark.parametrize("client", CLIENTS)
def test_consumer_protocol_static_member_restarted_keeps_its_partitions(client, server):
    topic, group = f"k848-static-{client}", f"k848-static-group-{client}"
    first: list[ClientProcess] = []
    again: ClientProcess | None = None
    try:
        with compat.record(client, "consumer-protocol-static"):
            create_topic(server.bootstrap, topic, PARTITIONS)
            first = [run_consumer(client, server.bootstrap, group, topic, instance_id=f"i-{n}", extra=CONSUMER)
                     for n in range(2)]
            wait_stable(first, topic, PARTITIONS)
            kept, other = first[0].assignment, first[1]
            seen = len(other.events)  # its revocations of the first join (it may have joined alone) are fine
            stop_all([first[0]])  # a static member's close leaves with epoch -2: the group keeps it and its partitions
            away = admin_client(client, server.bootstrap).describe(group)
            assert sorted((away.instances[m], sorted(p)) for m, p in away.members.items()) == \
                [("i-0", sorted(kept)), ("i-1", sorted(other.assignment))], away
            again = run_consumer(client, server.bootstrap, group, topic, instance_id="i-0", extra=CONSUMER)
            wait_stable([again, other], topic, PARTITIONS)
            assert again.assignment == kept
            assert rebalance_events(other, seen) == []  # it never got (then gave back) the static member's partitions
            sent = produce(server.bootstrap, topic, PARTITIONS, PER_ROUND)
            wait_consumed([again, other], PER_ROUND)
            assert_exactly_once([again, other], sent)
            stop_all([again, other])
    finally:
        for m in [*first, *([again] if again else [])]:
            m.kill()
