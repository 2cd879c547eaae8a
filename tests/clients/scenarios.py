"""Group scenarios shared by the harness's tests against peers and (later) against our server.

Each takes a bootstrap address and a client name, so the same assertions run on every client and
every server. They check the group through what the clients report (assignment, records, commits)
and through an independent OffsetFetch.
"""

from __future__ import annotations

from collections import Counter

from tests.clients.drivers import run_consumer
from tests.clients.process import ClientProcess, wait_all
from tests.clients.produce import committed_offsets, produce

GROUP_TIMEOUT = 60.0
CONSUME_TIMEOUT = 60.0
SERVER_LOG_TAIL = 40


def wait_stable(members: list[ClientProcess], topic: str, partitions: int, timeout: float = GROUP_TIMEOUT) -> None:
    """Every member owns something, no partition twice, every partition once."""
    everything = {(topic, p) for p in range(partitions)}

    def stable() -> bool:
        owned = [m.assignment for m in members]
        return (all(owned) and sum(map(len, owned)) == partitions and set().union(*owned) == everything)

    wait_all(members, stable, timeout,
             f"{len(members)} members owning each of {partitions} partitions exactly once")


def wait_consumed(members: list[ClientProcess], total: int, timeout: float = CONSUME_TIMEOUT) -> None:
    wait_all(members, lambda: sum(len(m.records) for m in members) >= total, timeout,
             f"{total} records consumed by the group")


def assert_exactly_once(members: list[ClientProcess], sent: dict[int, list[str]], first_offset: int = 0) -> None:
    """Every produced record from `first_offset` on was consumed by exactly one member, none other."""
    seen = Counter((r["partition"], r["offset"], r["value"]) for m in members for r in m.records)
    want = Counter((p, first_offset + i, v) for p, values in sent.items() for i, v in enumerate(values))
    dupes = {k: n for k, n in seen.items() if n > 1}
    if dupes:
        first = sorted(dupes)[:10]
        by = {k: [m.name for m in members for r in m.records if (r["partition"], r["offset"], r["value"]) == k]
              for k in first}
        positions = {m.name: [line for line in m.stderr if "offset for partition" in line or "positioned" in line]
                     for m in members}
        raise AssertionError(f"consumed more than once ({len(dupes)} records), the first by: {by}\n"
                             f"positions the clients logged: {positions}\n"
                             + "\n".join(m.describe(events=40) for m in members))
    assert seen == want, (f"missing {sorted(want - seen)[:10]}, unexpected {sorted(seen - want)[:10]}\n"
                          + "\n".join(m.describe() for m in members))


def wait_committed(members: list[ClientProcess], topic: str, ends: dict[int, int],
                   timeout: float = 30.0, server_log: list[str] | None = None) -> None:
    """The members together reported commits up to each partition's end (kcat: its 5 s auto-commit).
    A failure shows each member's events and stderr, and the tail of `server_log` (the server's log lines,
    e.g. ServerProcess.lines) when given, so that it explains itself."""
    def done() -> bool:
        merged: dict[tuple[str, int], int] = {}
        for m in members:
            for tp, offset in m.committed.items():
                merged[tp] = max(offset, merged.get(tp, -1))
        return all(merged.get((topic, p), -1) >= end for p, end in ends.items())

    try:
        wait_all(members, done, timeout, f"commits up to {ends}")
    except AssertionError as failure:
        if server_log is None:
            raise
        tail = "\n  ".join(list(server_log)[-SERVER_LOG_TAIL:])
        raise AssertionError(f"{failure}\n--- server log, last {SERVER_LOG_TAIL} lines:\n  {tail}") from None


def stop_all(members: list[ClientProcess], restarts_expected: bool = False) -> None:
    """SIGTERM each member; each must close cleanly (exit 0, a `closed` event, no `error` events, and no
    `restarting` ones unless `restarts_expected`: the test killed the only broker: ClientProcess.failures)."""
    for m in members:  # all at once, so they leave in parallel
        m.terminate()
    for m in members:
        code = m.stop()
        assert code == 0 and m.of("closed"), f"{m.name} did not close cleanly (exit {code})\n{m.describe()}"
        assert not m.failures(restarts_expected), f"{m.name} reported errors\n{m.describe()}"


def group_of_three_commits_survive_restart(client: str, bootstrap: str, topic: str, group: str,
                                           partitions: int = 6, per_round: int = 600) -> None:
    """3 members share a 6-partition topic: each partition owned by one member, every record consumed
    once; after a graceful stop and a restart of all members, the group resumes from its commits."""
    members = [run_consumer(client, bootstrap, group, topic) for _ in range(3)]
    try:
        wait_stable(members, topic, partitions)
        sent = produce(bootstrap, topic, partitions, per_round)
        wait_consumed(members, per_round)
        assert_exactly_once(members, sent)
        ends = {p: len(v) for p, v in sent.items()}
        wait_committed(members, topic, ends)
        stop_all(members)
        assert_exactly_once(members, sent)  # also across the rebalances of the shutdown
    finally:
        for m in members:
            m.kill()
    assert committed_offsets(bootstrap, group, topic, partitions) == ends

    again = [run_consumer(client, bootstrap, group, topic) for _ in range(3)]
    try:
        wait_stable(again, topic, partitions)
        sent2 = produce(bootstrap, topic, partitions, per_round, start=per_round)
        wait_consumed(again, per_round)
        first = per_round // partitions
        assert_exactly_once(again, sent2, first_offset=first)
        ends2 = {p: first + len(v) for p, v in sent2.items()}
        wait_committed(again, topic, ends2)
        stop_all(again)
        assert_exactly_once(again, sent2, first_offset=first)
    finally:
        for m in again:
            m.kill()
    assert committed_offsets(bootstrap, group, topic, partitions) == ends2
