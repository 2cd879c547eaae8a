"""One node of a cluster dies while groups of real clients consume and commit (docs/CLUSTER.md, "kill -9").

Shared by the integration test on local processes (tests/integration/test_cluster_failover.py) and the compose
suite on containers (tests/clients/test_compose_cluster.py): `cluster` is anything with `owners()`, `running()`,
`bootstrap(*node_ids)`, `kill(node_id)` and `session_seconds` (tests/support/cluster.py).

Checked: every partition the killed node owned has a live owner within TAKEOVER_SECONDS of the kill's confirmation
(its session lock ends its lease at once: docs/CLUSTER.md "Sessions"; the kill is confirmed once the signal was sent
-- the process is dead from then on --, and what came before it is the harness's: the compose suite asks `./dev` for
it through a file that is polled, and `podman kill` took 0.3-1.9 s on a loaded machine); each group continues on the
other nodes within broker.session.timeout.ms + 3 s, no produced message is skipped (each group consumes every one at
least once), and no acknowledged commit is lost (what each group reads back is at least every commit its members saw
acknowledged).

Where the killed node's address drops every packet (a killed container: `connect_hang_seconds`), a client may
spend its own connection-setup timeout on it before any answer of ours can redirect it: kafka-python sends
FindCoordinator to its "least loaded node", which right after the kill is the dead broker (no requests in flight,
its reconnect back-off over after 50 ms) rather than a live one with a fetch in flight, and waits up to
socket_connection_setup_timeout_ms (10 s, +-20% jitter after a failure) for the connection. The groups' bound is
then max(session, that hang) + 3 s; the server's own part is the takeover bound, the same everywhere.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from rules.placement import OFFSETS_TOPIC, partition_for
from tests.clients import committed_offsets, produce, run_consumer
from tests.clients.process import ClientProcess, wait_all
from tests.clients.scenarios import stop_all, wait_stable
from tests.support.cluster import wait_until

SLACK_SECONDS = 3.0  # the bound: groups continue within broker.session.timeout.ms + 3 s
TAKEOVER_SECONDS = 3.0  # from the confirmed kill, the killed node's partitions all have a live owner
KAFKA_PYTHON_CONNECT_HANG_SECONDS = 12.0  # kafka-python's socket_connection_setup_timeout_ms 10 s, +20% jitter


def acknowledged(members: list[ClientProcess], topic: str) -> dict[int, int]:
    """The highest commit per partition that a member of the group saw acknowledged."""
    best: dict[int, int] = {}
    for member in members:
        for (name, partition), offset in member.committed.items():
            if name == topic:
                best[partition] = max(offset, best.get(partition, -1))
    return best


def consumed_values(members: list[ClientProcess], topic: str) -> set[str]:
    return {r["value"] for m in members for r in m.records if r["topic"] == topic}


class Failover:
    """Groups (`members`: client -> member count, one group per client, named `<prefix>-<client>`) on `topic`."""

    def __init__(self, cluster: Any, topic: str, partitions: int, members: dict[str, int], offsets_partitions: int,
                 per_round: int = 600, prefix: str = "failover", connect_hang_seconds: float = 0.0) -> None:
        self.cluster, self.topic, self.partitions, self.per_round = cluster, topic, partitions, per_round
        self.connect_hang_seconds = connect_hang_seconds
        self.offsets_partitions = offsets_partitions
        self.spec = {f"{prefix}-{client}": (client, count) for client, count in members.items()}
        self.groups: dict[str, list[ClientProcess]] = {}
        self.timeline: dict[str, float] = {}  # seconds from the kill request: kill confirmed, taken over, ...

    def start_groups(self) -> dict[int, list[str]]:
        """Members joined and stable, round 1 produced and committed by every group; returns what was sent."""
        for name, (client, count) in self.spec.items():
            self.groups[name] = [run_consumer(client, self.cluster.bootstrap(), name, self.topic) for _ in range(count)]
        for members in self.groups.values():
            wait_stable(members, self.topic, self.partitions)
        sent = produce(self.cluster.bootstrap(), self.topic, self.partitions, self.per_round)
        least = self.per_round // self.partitions
        for name, members in self.groups.items():
            wait_all(members, lambda m=members: all(acknowledged(m, self.topic).get(p, -1) >= least
                                                    for p in range(self.partitions)), 60, f"{name} committed round 1")
        return sent

    def victim(self) -> int:
        """The running node coordinating the most groups."""
        owners = self.cluster.owners()
        coordinators = {name: owners[(OFFSETS_TOPIC, partition_for(name, self.offsets_partitions))][0]
                        for name in self.groups}
        victim = max(self.cluster.running(), key=lambda n: sum(c == n for c in coordinators.values()))
        assert victim in coordinators.values(), (owners, coordinators)
        return victim

    def kill_and_continue(self, sent: dict[int, list[str]]) -> tuple[int, dict[str, float]]:
        """Kill the victim while round 2 is produced to the survivors; asserts the bound, nothing skipped or lost.
        Returns the victim and each group's seconds from the kill to its first newer acknowledged commit."""
        victim = self.victim()
        before = {name: acknowledged(members, self.topic) for name, members in self.groups.items()}
        survivors = [n for n in self.cluster.running() if n != victim]
        owned = {key for key, (owner, _epoch) in self.cluster.owners().items() if owner == victim}
        killed_at, killed_wall = time.monotonic(), time.strftime("%H:%M:%S", time.gmtime())
        self.cluster.kill(victim)
        timeline = self.timeline = {"kill confirmed": time.monotonic() - killed_at}
        round_two: dict[int, list[str]] = {}

        def produce_round_two() -> None:
            round_two.update(produce(self.cluster.bootstrap(*survivors), self.topic, self.partitions,
                                     self.per_round, start=self.per_round, timeout=60))
            timeline["round 2 produced"] = time.monotonic() - killed_at

        producer = threading.Thread(target=produce_round_two)
        producer.start()
        continued = self._continued(before, killed_at, lambda: all(
            self.cluster.owners()[key][0] in survivors for key in owned), timeline)
        producer.join(90)
        assert not producer.is_alive() and len(round_two) == self.partitions, "round 2 was not delivered"
        took = timeline.get("taken over", math.inf) - timeline["kill confirmed"]
        assert took <= TAKEOVER_SECONDS, f"node {victim} taken over {took:.2f} s after its kill: {timeline}"
        bound = max(self.cluster.session_seconds, self.connect_hang_seconds) + SLACK_SECONDS
        if set(continued) != set(self.groups) or max(continued.values()) > bound:
            stuck = [m.describe(events=30, lines=60) for name, members in self.groups.items()
                     if continued.get(name, bound + 1) > bound for m in members]
            raise AssertionError(f"groups continued after {continued} s (bound {bound} s, victim node {victim} "
                                 f"killed at {killed_wall} UTC; seconds after: {timeline}), "
                                 f"owners {self.cluster.owners()}\n" + "\n".join(stuck))
        self._everything_consumed({v for values in [*sent.values(), *round_two.values()] for v in values})
        self._no_acknowledged_commit_lost()
        return victim, continued

    def _continued(self, before: dict[str, dict[int, int]], killed_at: float, taken_over: Callable[[], bool],
                   timeline: dict[str, float]) -> dict[str, float]:
        """Each group's seconds from the kill to its first newer acknowledged commit; also notes in `timeline`
        when `taken_over()` first held."""
        continued: dict[str, float] = {}
        deadline = killed_at + max(self.cluster.session_seconds, self.connect_hang_seconds) + SLACK_SECONDS + 30
        while (len(continued) < len(self.groups) or "taken over" not in timeline) and time.monotonic() < deadline:
            if "taken over" not in timeline and taken_over():
                timeline["taken over"] = time.monotonic() - killed_at
            for name, members in self.groups.items():
                now_acked = acknowledged(members, self.topic)
                if name not in continued and any(now_acked.get(p, -1) > before[name].get(p, -1)
                                                 for p in range(self.partitions)):
                    continued[name] = time.monotonic() - killed_at
            time.sleep(0.05)
        return continued

    def _everything_consumed(self, everything: set[str]) -> None:
        for name, members in self.groups.items():
            try:
                wait_until(lambda m=members: everything <= consumed_values(m, self.topic), 60,
                           f"{name} consumed both rounds")
            except AssertionError:
                missing = everything - consumed_values(members, self.topic)
                by_partition = {p: len([v for v in missing if int(v) % self.partitions == p])
                                for p in range(self.partitions)}
                raise AssertionError(f"{name} missing {by_partition}, owners {self.cluster.owners()}\n"
                                     + "\n".join(m.describe(events=20) for m in members)) from None

    def _no_acknowledged_commit_lost(self) -> None:
        final_acks = {name: acknowledged(members, self.topic) for name, members in self.groups.items()}
        for members in self.groups.values():
            stop_all(members)
        for name in self.groups:
            stored = committed_offsets(self.cluster.bootstrap(), name, self.topic, self.partitions)
            lost = {p: (stored[p], acked) for p, acked in final_acks[name].items() if stored[p] < acked}
            assert not lost, f"{name}: acknowledged commits lost (stored, acknowledged): {lost}"

    def kill_members(self) -> None:
        for members in self.groups.values():
            for member in members:
                member.kill()
