"""Every client the harness drives, against OUR server: consumer groups, durable commits, crashes.

Default run (not the peers marker). One server per client (module-scoped, parametrized by client);
each test uses its own topic and group on it. Per client:

- test_commits_survive_server_sigkill: a group of 3 (the client's default assignor, synchronous
  commits after each poll/batch) consumes 600 records of a 6-partition topic exactly once; the
  server is SIGKILLed and restarted on the same log.dirs and port; an independent OffsetFetch shows
  the committed ends; the running members reconnect and a NEW member joins, so the group rebalances
  and every partition is (re)started from its committed offset; 600 more records are consumed
  exactly once and none of the first 600 again. kcat cannot commit explicitly (librdkafka's
  auto-commit: every 5 s, on revoke, on close), so its members are stopped gracefully (SIGTERM:
  final commit + LeaveGroup) BEFORE the kill, which makes their commits final; a new kcat member
  then consumes the rest after the restart.
- test_crashed_member_expires: a member SIGKILLed (no LeaveGroup) is removed after its 6 s session
  timeout and its partitions move to the two others.
- test_static_member_rejoins_without_rebalance: with group.instance.id, a member SIGKILLed and
  restarted under the same instance id gets its partitions back, the others' assignments do not
  change and the group's generation stays (no rebalance in the server log); then the same for a
  member stopped cleanly (SIGTERM: a static member sends no LeaveGroup on close). kafkajs has no
  static membership: n/a.

Each test records its cells in the compatibility table (tests/clients/compat.py); with COMPAT_TABLE=1
the session writes docs/COMPATIBILITY.md.
"""

from __future__ import annotations

import time

import pytest

from tests.clients import compat
from tests.clients.drivers import CLIENTS, run_consumer
from tests.clients.our_server import RestartableServer, describe_group
from tests.clients.process import ClientProcess, wait_all
from tests.clients.produce import committed_offsets, create_topic, produce
from tests.clients.scenarios import assert_exactly_once, stop_all, wait_committed, wait_stable

PARTITIONS = 6
ROUND = 600

# Heartbeats every second where a test needs a short session timeout (the clients' default is 3 s, a
# third of 6 s: one late heartbeat on a busy 2-core machine would expire a live member).
HEARTBEAT_1S = {
    "java": {"heartbeat.interval.ms": 1000},
    "confluent": {"heartbeat.interval.ms": 1000},
    "kcat": {"heartbeat.interval.ms": 1000},
    "kafka-python": {"heartbeat_interval_ms": 1000},
    "aiokafka": {"heartbeat_interval_ms": 1000},
    "kafkajs": {"heartbeatInterval": 1000},
}


@pytest.fixture(scope="module", params=sorted(CLIENTS))
def client(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def ours(client, tmp_path_factory):
    """One server per client; SIGTERM at the end must exit 0."""
    server = RestartableServer(str(tmp_path_factory.mktemp(f"ours-{client}") / "data"))
    try:
        yield server
    finally:
        code = server.close()
    assert code == 0, f"server exited with {code}; log tail:\n  {server.tail()}"


def total_records(members: list[ClientProcess]) -> int:
    return sum(len(m.records) for m in members)


def wait_total(running: list[ClientProcess], everyone: list[ClientProcess], total: int, timeout: float = 60.0) -> None:
    """Records consumed by `everyone` (stopped members included) reach `total`; `running` must stay up."""
    wait_all(running, lambda: total_records(everyone) >= total, timeout, f"{total} records consumed by the group")


def merged(*rounds: dict[int, list[str]]) -> dict[int, list[str]]:
    return {p: [v for r in rounds for v in r[p]] for p in range(PARTITIONS)}


def assignment_changes(member: ClientProcess) -> int:
    return len(member.of("assigned")) + len(member.of("revoked"))


def kill_all(members: list[ClientProcess]) -> None:
    for m in members:
        m.kill()


def test_commits_survive_server_sigkill(client, ours):
    """3 members commit synchronously after each poll; the server is SIGKILLed and restarted on the same
    log.dirs and port; the members reconnect, a new member joins, and 600 more records are consumed exactly
    once, none of the first 600 again. kcat has only librdkafka's auto-commit (every 5 s, on revoke, on
    close), so its members are stopped gracefully (SIGTERM) BEFORE the kill, which makes their commits
    final; a new kcat member then resumes alone after the restart."""
    topic, group = f"restart-{client}", f"restart-group-{client}"
    create_topic(ours.bootstrap, topic, PARTITIONS)
    members: list[ClientProcess] = []
    try:
        with compat.record(client, "group-consume"):
            members = [run_consumer(client, ours.bootstrap, group, topic) for _ in range(3)]
            wait_stable(members, topic, PARTITIONS)
            sent = produce(ours.bootstrap, topic, PARTITIONS, ROUND)
            wait_total(members, members, ROUND)
            assert_exactly_once(members, sent)
            ends = {p: len(v) for p, v in sent.items()}
            wait_committed(members, topic, ends)

        with compat.record(client, "restart"):
            graceful = not CLIENTS[client].explicit_commit
            if graceful:  # kcat: make the auto-commits final before the crash
                stop_all(members)
            ours.crash_and_restart()
            assert committed_offsets(ours.bootstrap, group, topic, PARTITIONS) == ends, \
                f"committed offsets after the restart differ from {ends}; server log:\n  {ours.tail()}"
            newcomer = run_consumer(client, ours.bootstrap, group, topic, name=f"{client}-new")
            everyone = members + [newcomer]
            running = [newcomer] if graceful else everyone
            wait_stable(running, topic, PARTITIONS)
            state, assigned = describe_group(ours.current, group)
            assert state == "Stable" and sorted(map(sorted, assigned.values())) == sorted(
                sorted(m.assignment) for m in running), f"DescribeGroups: {state} {assigned}"
            sent2 = produce(ours.bootstrap, topic, PARTITIONS, ROUND, start=ROUND)
            wait_total(running, everyone, 2 * ROUND)
            both = merged(sent, sent2)
            assert_exactly_once(everyone, both)
            ends2 = {p: ends[p] + len(v) for p, v in sent2.items()}
            wait_committed(running, topic, ends2)
            # kafkajs restarts its consumer when its only broker is gone for a moment (KafkaJSNoBrokerAvailableError
            # from its fetch loop, seen in CI): its own recovery from the kill, as against Kafka
            stop_all(running, restarts_expected=True)
            assert_exactly_once(everyone, both)  # also across the rebalances of the shutdown
            assert committed_offsets(ours.bootstrap, group, topic, PARTITIONS) == ends2
    finally:
        kill_all(members)


def test_crashed_member_expires(client, ours):
    """A member killed with SIGKILL sends no LeaveGroup: the server must expire its 6 s session
    (group.min.session.timeout.ms default) and hand its partitions to the other two."""
    topic, group = f"expiry-{client}", f"expiry-group-{client}"
    members: list[ClientProcess] = []
    try:
        with compat.record(client, "session-expiry"):
            create_topic(ours.bootstrap, topic, PARTITIONS)
            members = [run_consumer(client, ours.bootstrap, group, topic, session_timeout_ms=6000,
                                    extra=HEARTBEAT_1S[client]) for _ in range(3)]
            wait_stable(members, topic, PARTITIONS)
            victim, rest = members[0], members[1:]
            orphaned = victim.assignment
            victim.kill()
            killed_at = time.monotonic()
            wait_stable(rest, topic, PARTITIONS, timeout=40)
            took = time.monotonic() - killed_at
            expired = ours.events("member session expired", group=group)
            assert len(expired) == 1 and expired[0]["session_timeout_ms"] == 6000, \
                f"expected one session expiry of a 6000 ms member in group {group}: {expired}"
            assert not ours.events("member left group", group=group), "a SIGKILLed client cannot leave"
            assert orphaned <= set().union(*(m.assignment for m in rest))
            assert took < 30, f"partitions moved {took:.1f}s after the kill"
            state, assigned = describe_group(ours.current, group)
            assert state == "Stable" and sorted(map(sorted, assigned.values())) == sorted(
                sorted(m.assignment) for m in rest), f"DescribeGroups: {state} {assigned}"
            sent = produce(ours.bootstrap, topic, PARTITIONS, 60)
            wait_total(rest, rest, 60)
            assert_exactly_once(rest, sent)
    finally:
        kill_all(members)


def _instance_of(member: ClientProcess) -> str:
    return member.cmd[member.cmd.index("--instance-id") + 1]


def _bounce_static(client: str, ours: RestartableServer, group: str, topic: str, running: list[ClientProcess],
                   victim: ClientProcess, instance_id: str, graceful: bool) -> ClientProcess:
    """Stop `victim` (SIGTERM: commit + close, which for a static member sends no LeaveGroup; or SIGKILL) and
    start it again under the same instance id; returns the new process. Checks that it gets its old
    partitions back, that the others' assignments and the group's generation do not change."""
    others = [m for m in running if m is not victim]
    before = {m.name: m.assignment for m in running}
    changes = {m.name: assignment_changes(m) for m in others}
    rebalances = len(ours.events("rebalance", group=group))
    replaced = len(ours.events("static member replaced without rebalance", group=group, instance=instance_id))
    if graceful:
        code = victim.stop()
        assert code == 0 and not victim.failures(), f"{victim.name} did not close cleanly\n{victim.describe()}"
    else:
        victim.kill()
    back = run_consumer(client, ours.bootstrap, group, topic, instance_id=instance_id, extra=HEARTBEAT_1S[client],
                        name=f"{client}-{instance_id}-back")
    back.wait_until(lambda c: c.assignment == before[victim.name], 40,
                    f"the old assignment {sorted(before[victim.name])} back")
    assert len(ours.wait_for_events("static member replaced without rebalance", replaced + 1,
                                    group=group, instance=instance_id)) > replaced, \
        f"no static replacement of {instance_id} in the server log:\n  {ours.tail()}"
    assert not ours.events("member left group", group=group), "a static member sent LeaveGroup on close"
    assert len(ours.events("rebalance", group=group)) == rebalances, \
        f"the group rebalanced: {ours.events('rebalance', group=group)[rebalances:]}"
    for m in others:
        assert m.assignment == before[m.name] and assignment_changes(m) == changes[m.name], \
            f"{m.name}'s assignment changed\n{m.describe()}"
    # the server's own view (DescribeGroups): Stable, the same three instances, the assignments the clients report
    state, assigned = describe_group(ours.current, group)
    now = [back if m is victim else m for m in running]
    want = {_instance_of(m): m.assignment for m in now}
    assert state == "Stable" and assigned == want, f"DescribeGroups: {state} {assigned}, clients report {want}"
    return back


def test_static_member_rejoins_without_rebalance(client, ours):
    """group.instance.id: a member restarted under the same instance id, after a crash (SIGKILL) and after a
    clean close (SIGTERM: a static member leaves no LeaveGroup, KIP-345), replaces its old member id without
    a rebalance and resumes at its committed offsets."""
    topic, group = f"static-{client}", f"static-group-{client}"
    members: list[ClientProcess] = []
    try:
        if not CLIENTS[client].static_membership:
            reason = f"{client} has no static membership (group.instance.id)"
            compat.mark(client, ("static", "static-graceful"), "n/a", reason)
            pytest.skip(reason)
        with compat.record(client, "static"):
            create_topic(ours.bootstrap, topic, PARTITIONS)
            ids = [f"{client}-instance-{i}" for i in range(3)]
            members = [run_consumer(client, ours.bootstrap, group, topic, instance_id=i, extra=HEARTBEAT_1S[client])
                       for i in ids]
            running = list(members)
            wait_stable(running, topic, PARTITIONS)
            sent = produce(ours.bootstrap, topic, PARTITIONS, 60)
            wait_total(running, members, 60)
            ends = {p: len(v) for p, v in sent.items()}
            wait_committed(running, topic, ends)
            back = _bounce_static(client, ours, group, topic, running, running[0], ids[0], graceful=False)
            members.append(back)
            running[0] = back
            sent2 = produce(ours.bootstrap, topic, PARTITIONS, 60, start=60)
            wait_total(running, members, 120)
            assert_exactly_once(members, merged(sent, sent2))

        with compat.record(client, "static-graceful"):
            back = _bounce_static(client, ours, group, topic, running, running[1], ids[1], graceful=True)
            members.append(back)
            running[1] = back
            sent3 = produce(ours.bootstrap, topic, PARTITIONS, 60, start=120)
            wait_total(running, members, 180)
            assert_exactly_once(members, merged(sent, sent2, sent3))
    finally:
        kill_all(members)
