"""Cluster-mode benchmarks (docs/CLUSTER.md): failover time, durable OffsetCommit through PostgreSQL vs the local
log, and heartbeats/s of a cluster node vs a local one.

    .venv/bin/python -m bench.bench_cluster [--kills 5] [--reps 2] [--seconds 3] [--single-seconds 2]
        [--session-ms 3000] [--heartbeat-ms 500] [--skip failover,commits,heartbeats] [--no-docs]
    ./dev bench bench_cluster --kills 10 --reps 3 --seconds 4      # the figures of docs/BENCHMARKS.md

A throwaway PostgreSQL (tests/support/postgres.py, fsync on, on this machine) is the log of record.

1. Failover: three nodes (tests/support/cluster.py, `--session-ms`/`--heartbeat-ms` leases), a topic of 6
   partitions produced to continuously (~200 records/s), a busy group of two confluent-kafka consumers committing
   after every poll. `--kills` times: kill -9 the node owning the group's __consumer_offsets partition (its
   coordinator), time until EVERY member has had a commit acknowledged again (now on another node), then restart
   the victim and wait until the partitions settled back and both members commit again. Each time, the max, and
   the bound the issue sets: broker.session.timeout.ms + 3 s.
2. Durable OffsetCommit partition-offsets/s and p50/p99: a local-mode server (fsync group commit) and a one-node
   cluster (storage.url: an answer means the batch was committed in PostgreSQL) started together and measured
   interleaved A B A B, in both client batchings (bench/lib/compare.py MODES), requests as bench_offsets sends.
3. Heartbeats/s of a 100-member group on the same two servers, as bench_groups measures it (target: the cluster
   node >= 0.95x the local one: cluster mode must not slow the hot path).

Servers run pinned to core 0, the load generator to core 1; PostgreSQL and the failover clients are not pinned.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.lib.commits import PARTITIONS, TOPIC, commit_workload
from bench.lib.compare import (
    MODES,
    SERVER_CPU,
    Mode,
    interleaved,
    parser_for,
    pin_to_load_cpu,
    seconds_of,
    summary_header,
    summary_rows,
    wire_port,
)
from bench.lib.loadgen import Result, Workload
from bench.lib.members import heartbeat_check, heartbeat_group
from bench.lib.peers import Endpoint, start_server
from bench.lib.report import command_line, machine_facts, markdown_table, median, write_section

HEARTBEAT_SESSION_MS = 45000  # members stay alive while the other server is measured
FAILOVER_TOPIC, FAILOVER_PARTITIONS = "bench-failover", 6
SLACK_SECONDS = 3.0
NOTES = ("Notes: the cluster's OffsetCommit is answered after PostgreSQL's COMMIT (fsync on, same disk, same two "
         "cores); PostgreSQL's CPU is in \"other CPU\", which also holds whatever else runs on the machine. "
         "Failover leases: --session-ms/--heartbeat-ms (defaults 3000/500, the integration tests' values).")


# --- failover --------------------------------------------------------------------------------------------------

class SteadyProducer:
    """Produces to every partition of `topic` in a thread (~`rate`/s) until closed; delivery errors are counted
    (a dead node's partitions refuse writes until moved), never fatal."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float = 200.0) -> None:
        from confluent_kafka import Producer

        # log_level 2: no line per refused connection to the killed node (expected, and counted as errors)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 2})
        self.topic, self.partitions, self.pause = topic, partitions, 1.0 / rate
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.errors += 1

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            with contextlib.suppress(BufferError):
                self.producer.produce(self.topic, str(i).encode(), partition=i % self.partitions,
                                      on_delivery=self._delivered)
            self.producer.poll(0)
            i += 1
            time.sleep(self.pause)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.flush(10)


def _member_acks(members: list[Any]) -> list[dict[int, int]]:
    return [{p: o for (t, p), o in m.committed.items() if t == FAILOVER_TOPIC} for m in members]


def _wait_all_commit_after(members: list[Any], before: list[dict[int, int]], started: float,
                           timeout: float) -> float | None:
    """Seconds from `started` until every member had a commit newer than `before` acknowledged (None: timeout)."""
    done: dict[int, float] = {}
    while len(done) < len(members) and time.monotonic() - started < timeout:
        for i, acks in enumerate(_member_acks(members)):
            if i not in done and any(o > before[i].get(p, -1) for p, o in acks.items()):
                done[i] = time.monotonic() - started
        time.sleep(0.02)
    return max(done.values()) if len(done) == len(members) else None


def failover_times(kills: int, session_ms: int, heartbeat_ms: int, log: Any = print) -> list[float | None]:
    """Kill the busy group's coordinator `kills` times; each kill's failover seconds (None: no commit within
    the bound + 30 s)."""
    from rules.placement import OFFSETS_TOPIC, partition_for
    from tests.clients import create_topic, run_consumer
    from tests.clients.scenarios import wait_stable
    from tests.support.cluster import OFFSETS_PARTITIONS, ClusterNodes
    from tests.support.postgres import PostgresServer

    group = "bench-failover-group"
    times: list[float | None] = []
    with PostgresServer() as pg, tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        cluster = ClusterNodes(pg.new_database(), Path(tmp), **{"broker.session.timeout.ms": str(session_ms),
                                                                "broker.heartbeat.interval.ms": str(heartbeat_ms)})
        members: list[Any] = []
        producer: SteadyProducer | None = None
        try:
            cluster.start_all(3)
            create_topic(cluster.bootstrap(), FAILOVER_TOPIC, FAILOVER_PARTITIONS)
            cluster.settled({1, 2, 3})
            members = [run_consumer("confluent", cluster.bootstrap(), group, FAILOVER_TOPIC) for _ in range(2)]
            wait_stable(members, FAILOVER_TOPIC, FAILOVER_PARTITIONS)
            producer = SteadyProducer(cluster.bootstrap(), FAILOVER_TOPIC, FAILOVER_PARTITIONS)
            bound = session_ms / 1000 + SLACK_SECONDS
            for kill in range(kills):
                if _wait_all_commit_after(members, _member_acks(members), time.monotonic(), 30) is None:
                    raise RuntimeError("the group does not commit (before a kill)")
                victim = cluster.owners()[(OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS))][0]
                if victim is None:
                    raise RuntimeError("the group's offsets partition has no owner")
                before = _member_acks(members)
                killed_at = time.monotonic()
                cluster.kill(victim)
                seconds = _wait_all_commit_after(members, before, killed_at, bound + 30)
                times.append(seconds)
                log(f"kill {kill + 1}: node {victim}, every member committed again after "
                    + (f"{seconds:.2f} s" if seconds is not None else "NEVER (timeout)"))
                cluster.start(victim)
                cluster.settled({1, 2, 3})
        finally:
            if producer is not None:
                producer.close()
            for member in members:
                member.kill()
            cluster.close()
    return times


# --- OffsetCommit and heartbeats: local vs cluster, A B A B ----------------------------------------------------

@contextlib.contextmanager
def local_and_cluster(pg_url: str) -> Iterator[dict[str, Endpoint]]:
    """A local-mode server and a one-node cluster on `pg_url`, both pinned to SERVER_CPU, the commit benchmark's
    topic created; yields once the cluster node owns every partition."""
    from tests.support.cluster import ClusterDatabase

    with contextlib.ExitStack() as stack:
        local = stack.enter_context(start_server("ours", cpu=SERVER_CPU, topics={TOPIC: PARTITIONS}))
        node = stack.enter_context(start_server("ours", cpu=SERVER_CPU, topics={TOPIC: PARTITIONS},
                                                overrides={"storage.url": pg_url, "node.id": "1"}))
        ClusterDatabase(pg_url).settled({1}, timeout=60)
        yield {"local": local, "cluster": node}


def ratio_line(results: dict[str, list[Result]], what: str) -> str:
    local, cluster = (median([r.rps for r in results[n]]) if results[n] else 0.0 for n in ("local", "cluster"))
    return f"{what}: cluster / local = {cluster / local:.2f}" if local else f"{what}: no local runs"


def compare_runs(args: Any, failures: list[str]) -> tuple[dict, dict]:
    """(commits, heartbeats): results[mode.key][server] of interleaved runs on the two servers."""
    from tests.support.postgres import PostgresServer

    with PostgresServer() as pg:
        pin_to_load_cpu()  # after PostgreSQL started: it is not pinned to the load generator's core
        with local_and_cluster(pg.new_database()) as endpoints:
            commits, heartbeats = _interleaved_runs(args, endpoints, failures)
    return commits, heartbeats


def _interleaved_runs(args: Any, endpoints: dict[str, Endpoint], failures: list[str]) -> tuple[dict, dict]:
    commits = interleaved(endpoints, args.reps, lambda _n, mode: commit_workload(seconds_of(args, mode), mode),
                          failures) if "commits" not in args.skip else {}
    heartbeats: dict = {}
    if "heartbeats" not in args.skip:
        frames = {name: asyncio.run(heartbeat_group(ep.host, wire_port(ep), 100, HEARTBEAT_SESSION_MS))
                  for name, ep in endpoints.items()}

        def workload_for(name: str, mode: Mode) -> Workload:
            return Workload(frames[name], connections=mode.connections, in_flight=mode.in_flight,
                            duration=seconds_of(args, mode), check=heartbeat_check)

        heartbeats = interleaved(endpoints, args.reps, workload_for, failures)
    return commits, heartbeats


def comparison_text(title: str, unit: str, results: dict, scale: float = 1.0) -> str:
    if not results:
        return ""
    return "\n\n".join(f"### {title}, {mode.label}\n\n"
                       + markdown_table(summary_header(unit), summary_rows(results[mode.key], scale)) + "\n\n"
                       + ratio_line(results[mode.key], unit) for mode in MODES)


def failover_text(times: list[float | None], session_ms: int) -> str:
    if not times:
        return ""
    bound = session_ms / 1000 + SLACK_SECONDS
    measured = [t for t in times if t is not None]
    worst = max(measured) if len(measured) == len(times) else None
    rows = [[i + 1, f"{t:.2f}" if t is not None else "timeout"] for i, t in enumerate(times)]
    verdict = (f"max **{worst:.2f} s** vs bound {bound:.1f} s (session {session_ms / 1000:g} s + 3 s): "
               + ("within" if worst <= bound else "OVER")) if worst is not None else "some kill never recovered"
    return ("### Failover: kill -9 the busy group's coordinator, seconds until every member commits again\n\n"
            + markdown_table(["kill", "seconds"], rows) + f"\n\n{verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("bench.bench_cluster", __doc__, reps=2, timed=True)
    parser.set_defaults(seconds=3.0)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--session-ms", type=int, default=3000, help="broker.session.timeout.ms of the failover")
    parser.add_argument("--heartbeat-ms", type=int, default=500, help="broker.heartbeat.interval.ms of the failover")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: failover, commits, heartbeats")
    args = parser.parse_args(argv)
    facts = machine_facts()
    failures: list[str] = []
    times = failover_times(args.kills, args.session_ms, args.heartbeat_ms) if "failover" not in args.skip else []
    commits, heartbeats = compare_runs(args, failures)
    text = "\n\n".join(part for part in (
        failover_text(times, args.session_ms),
        comparison_text("Durable OffsetCommit (1 topic x 10 partitions per request)", "partition-offsets/s",
                        commits, PARTITIONS),
        comparison_text("Heartbeats/s, 100-member group", "heartbeats/s", heartbeats),
        NOTES + "".join(f"\n- {f}" for f in failures)) if part)
    print("\n" + text)
    if args.skip and not args.no_docs:  # the section holds every part: a partial run would erase the others
        print("\n(docs/BENCHMARKS.md not updated: --skip makes a partial run)")
    elif not args.no_docs:
        command = command_line("bench.bench_cluster", sys.argv[1:] if argv is None else argv)
        write_section("cluster", "Cluster mode: failover, OffsetCommit through PostgreSQL, heartbeats "
                      "(bench/bench_cluster.py)", command, facts, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
