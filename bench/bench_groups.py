"""Classic-group benchmarks: heartbeats/s of a 100-member group, and rebalance time for N members.

    .venv/bin/python -m bench.bench_groups [--servers ours,tansu,noida-db,rdkafka-mock] [--reps 3]
        [--seconds 4] [--single-seconds 2] [--sizes 10,100,500] [--no-docs]

Servers are pinned to core 0 (bench.compare), the load generator and the member clients run on
core 1. All servers named are started together and measured in the same run, interleaved.

1. Heartbeats/s: 100 members join one group (JoinGroup v5 / SyncGroup v3, what every peer parses;
   45 s sessions, so members stay alive while the other servers are measured), then pre-encoded
   Heartbeat v3 frames for all 100 members are sent by bench.loadgen in its own pinned process in
   both client batchings (bench.compare.MODES: 16 connections x 32 in flight, and 1 x 1); the first
   answer of each connection must carry error code 0. Order: rep, mode, server (A B C A B C).
2. Rebalance time for 10/100/500 members: the members join and sync once (this first generation
   includes the server's initial rebalance delay and is not timed); then the leader rejoins, which
   forces a rebalance, every member rejoins at once, the followers send SyncGroup, then the leader
   (50 ms later, not timed: librdkafka's mock needs followers first). Timed: from the leader's
   JoinGroup to the last JoinGroup answer, plus from the leader's SyncGroup to the last SyncGroup
   answer: join+sync without the initial delay. Order: rep, size, server; a server that fails or
   exceeds REBALANCE_LIMIT_S at one size skips the larger ones.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from bench.lib.compare import (
    MODES,
    Mode,
    interleaved,
    medians,
    parser_for,
    pin_to_load_cpu,
    seconds_of,
    server_names,
    servers,
    summary_header,
    summary_rows,
    wire_port,
)
from bench.lib.loadgen import Workload
from bench.lib.members import form_group, heartbeat_check, heartbeat_group, sync_all
from bench.lib.report import command_line, machine_facts, markdown_table, median, write_section

REBALANCE_LIMIT_S = 60  # a rebalance taking longer is reported as a timeout, larger sizes skipped
HEARTBEAT_SESSION_MS = 45000


async def timed_rebalance(host: str, port: int, group: str, size: int) -> float:
    members = await form_group(host, port, group, size)
    try:
        leader = next(m for m in members if m.member_id == m.leader)
        started = time.perf_counter()
        # the leader's JoinGroup starts the rebalance; everyone else rejoins at the same moment
        old = leader.generation
        await asyncio.gather(*(m.join(newer_than=old) for m in members))
        joined = time.perf_counter() - started
        elapsed = joined + await sync_all(members)
        if {m.generation for m in members} != {leader.generation}:
            raise RuntimeError("members did not land in one generation")
        return elapsed
    finally:
        for m in members:
            m.close()


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("bench.bench_groups", __doc__, timed=True)
    parser.add_argument("--sizes", default="10,100,500")
    args = parser.parse_args(argv)
    names = server_names(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    facts = machine_facts()
    pin_to_load_cpu()

    failures: list[str] = []
    with servers(names, failures) as endpoints:
        frames: dict[str, list[bytes]] = {}
        for name, ep in list(endpoints.items()):
            try:
                frames[name] = asyncio.run(asyncio.wait_for(
                    heartbeat_group(ep.host, wire_port(ep), 100, HEARTBEAT_SESSION_MS), REBALANCE_LIMIT_S))
            except Exception as exc:  # report and go on with the other servers
                failures.append(f"{name}: forming the 100-member group failed: {type(exc).__name__}: {exc}")

        def workload_for(name: str, mode: Mode) -> Workload:
            return Workload(frames[name], connections=mode.connections, in_flight=mode.in_flight,
                            duration=seconds_of(args, mode), check=heartbeat_check)

        heartbeats = interleaved({n: ep for n, ep in endpoints.items() if n in frames}, args.reps, workload_for,
                                 failures)
        rebalance = rebalance_times(endpoints, sizes, args.reps, failures)

    body = [f"### Heartbeats/s, 100-member group, {mode.label}, {args.reps} interleaved repetitions\n\n"
            + markdown_table(summary_header("heartbeats/s"), summary_rows(heartbeats[mode.key]))
            for mode in MODES]
    rows = [[name, *(cells.get(size, "skipped") for size in sizes)] for name, cells in rebalance.items()]
    body.append("### Rebalance (leader rejoins, all rejoin, leader assigns, all sync), median ms of "
                f"{args.reps}, no initial delay\n\n"
                + markdown_table(["server", *[f"{s} members" for s in sizes]], rows))
    body.append(NOTES + "".join(f"\n- {f}" for f in failures))
    text = "\n\n".join(body)
    print("\n" + text)
    figures = {f"heartbeats_{m.key}": medians(heartbeats[m.key]) for m in MODES}
    figures["join_sync_500_ms"] = {n: float(c[500].replace(",", "")) for n, c in rebalance.items()
                                   if c.get(500, "").replace(",", "").isdigit()}
    if not args.no_docs:
        write_section("groups", "Groups: heartbeats/s and join+sync time (bench/bench_groups.py)",
                      command_line("bench.bench_groups", argv),
                      facts, text, figures)
    return 0


def rebalance_times(endpoints: dict[str, Any], sizes: list[int], reps: int,
                    failures: list[str]) -> dict[str, dict[int, str]]:
    """cells[server][size]: median ms, or why not. Interleaved: rep, size, server."""
    times: dict[str, dict[int, list[float]]] = {n: {s: [] for s in sizes} for n in endpoints}
    broken: dict[str, dict[int, str]] = {n: {} for n in endpoints}
    for rep in range(reps):
        for size in sizes:
            for name, ep in endpoints.items():
                if broken[name]:
                    continue  # a failure at a smaller size skips this one
                try:
                    times[name][size].append(asyncio.run(asyncio.wait_for(
                        timed_rebalance(ep.host, wire_port(ep), f"bench-rebalance-{size}-{rep}", size),
                        REBALANCE_LIMIT_S)))
                    print(f"rep {rep + 1} rebalance {size:>4} {name:<13} {times[name][size][-1] * 1000:,.0f} ms",
                          flush=True)
                except TimeoutError:
                    failures.append(f"{name}: rebalance of {size} took over {REBALANCE_LIMIT_S} s")
                    broken[name][size] = "timeout"
                except Exception as exc:
                    failures.append(f"{name}: rebalance of {size} failed: {type(exc).__name__}: {exc}")
                    broken[name][size] = "failed"
    return {n: {**{s: f"{median(v) * 1000:,.0f}" for s, v in times[n].items() if v}, **broken[n]}
            for n in endpoints}


NOTES = """Notes:
- Rates count answers in the timed window; the first answer on each connection must be error code 0.
  CPU columns: CPU seconds per wall second (1.00 = one core); a load generator near 1.00 would mean
  the figure is a lower bound for the server. Compare servers within one batching only.
- The rdkafka mock is driven on its own port, not through the shared ApiVersions shim (a Python proxy
  that would be what is measured); no workload here sends ApiVersions.
- The mock elects a leader only after session.timeout - 1 s, tansu spends O(group size) per heartbeat
  and rebalances slowly: where a size exceeds the time bound it says so below."""


if __name__ == "__main__":
    sys.exit(main())
