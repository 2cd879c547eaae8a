"""Consumer groups (KIP-848) against classic groups on our server, in one run.

    .venv/bin/python -m bench.bench_consumer_groups [--reps 3] [--seconds 4] [--single-seconds 2]
        [--members 100] [--partitions 1000] [--topics 4] [--interval-ms 1000] [--no-docs]

Our server (pinned to core 0) runs with group.consumer.heartbeat.interval.ms = group.consumer.min.heartbeat.
interval.ms = --interval-ms and --topics topics holding --partitions partitions between them; the members
and the load generator run on core 1.

1. Heartbeats/s of a 100-member group. Classic: 100 members join and sync (JoinGroup v5, SyncGroup v3, as
   bench_groups), then their pre-encoded Heartbeat v3 frames. Consumer: 100 simulated members
   (bench/lib/consumer_members.py: they heartbeat and reconcile as the Java client does) join with
   ConsumerGroupHeartbeat v1 at epoch 0 and heartbeat until every member is stable at the group's epoch; then
   their pre-encoded steady heartbeats (member id, current epoch, every optional field null / -1). bench.loadgen
   sends each in both batchings of bench.compare.MODES, alternating classic and consumer in every repetition
   (A B A B); the first answer of each connection must carry error code 0 (and, for consumer, the member's
   epoch unchanged). Before and after the runs every consumer member sends one steady heartbeat, which must
   be answered without error, at its epoch, without an assignment. Target: consumer >= classic.
2. Convergence after one join: 100 members stable (their joins spread over one interval), a 101st joins; the
   time until every member is stable at the new epoch (at one epoch, owning what it was assigned and having
   reported it, each partition owned exactly once), in heartbeat intervals (the one the server returns).
   No partition may ever be owned by two members at once. Target: <= 2 intervals.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass, field

from bench.lib.compare import (
    MODES,
    Mode,
    interleaved,
    medians,
    parser_for,
    pin_to_load_cpu,
    seconds_of,
    summary_header,
    summary_rows,
)
from bench.lib.consumer_groups import Convergence, convergence, form_stable, leave_all, verify_steady
from bench.lib.consumer_members import ConsumerMember, SteadyCheck, steady_frames
from bench.lib.loadgen import Result, Workload
from bench.lib.members import heartbeat_check, heartbeat_group
from bench.lib.peers import Endpoint, start_server
from bench.lib.report import command_line, machine_facts, markdown_table, median, write_section

CLASSIC_SESSION_MS = 45000  # as bench_groups: members stay alive while the other protocol is measured
FORM_LIMIT_INTERVALS = 60  # forming the group may take this many heartbeat intervals
CONVERGE_LIMIT_INTERVALS = 30


@dataclass
class Outcome:
    heartbeats: dict[str, dict[str, list[Result]]]  # [mode][protocol]
    convergences: list[Convergence]
    consumer_formation_s: float | None = None
    failures: list[str] = field(default_factory=list)


def topic_names(count: int) -> list[str]:
    return [f"bench-cg-{i}" for i in range(count)]


def topic_sizes(count: int, partitions: int) -> dict[str, int]:
    """`partitions` split between `count` topics (the first ones take the remainder)."""
    return {name: partitions // count + (i < partitions % count) for i, name in enumerate(topic_names(count))}


def measure(args: argparse.Namespace) -> Outcome:
    overrides = {"group.consumer.heartbeat.interval.ms": str(args.interval_ms),
                 "group.consumer.min.heartbeat.interval.ms": str(args.interval_ms)}
    interval_s = args.interval_ms / 1000
    outcome = Outcome({m.key: {"classic": [], "consumer": []} for m in MODES}, [])
    failures = outcome.failures
    with start_server("ours", topics=topic_sizes(args.topics, args.partitions), overrides=overrides) as ep:
        frames: dict[str, list[bytes]] = {}
        checks = {"classic": heartbeat_check}
        frames["classic"] = asyncio.run(heartbeat_group(ep.host, ep.port, args.members, CLASSIC_SESSION_MS))
        try:
            members, outcome.consumer_formation_s = asyncio.run(
                stable_members(ep, args.members, topic_names(args.topics), args.partitions, interval_s))
            frames["consumer"], checks["consumer"] = steady_frames(members), SteadyCheck(members)
            failures += [f"before the runs: {p}" for p in verify_steady(ep.host, ep.port, members)]
        except Exception as exc:  # a finding to report; classic is still measured
            failures.append(f"consumer: forming the {args.members}-member group failed: {type(exc).__name__}: {exc}")
            members = []

        def workload_for(protocol: str, mode: Mode) -> Workload:
            return Workload(frames[protocol], connections=mode.connections, in_flight=mode.in_flight,
                            duration=seconds_of(args, mode), check=checks[protocol])

        outcome.heartbeats = interleaved({p: ep for p in frames}, args.reps, workload_for, failures)
        for mode in MODES:
            outcome.heartbeats[mode.key].setdefault("consumer", [])
        if members:
            failures += [f"after the runs: {p}" for p in verify_steady(ep.host, ep.port, members)]
            failures += leave_all(ep.host, ep.port, members)
        for rep in range(args.reps):
            try:
                result = asyncio.run(convergence(
                    ep.host, ep.port, f"bench-converge-{rep}", args.members, topic_names(args.topics),
                    args.partitions, interval_s, CONVERGE_LIMIT_INTERVALS))
            except Exception as exc:
                failures.append(f"convergence rep {rep + 1} failed: {type(exc).__name__}: {exc}")
                continue
            outcome.convergences.append(result)
            print(f"rep {rep + 1} convergence: {result.seconds * 1000:,.0f} ms = {result.intervals:.2f} intervals "
                  f"(epoch {result.epoch_before} -> {result.epoch_after}, {result.revoking_members} members "
                  f"revoked, {result.heartbeats} heartbeats, max owned twice {result.max_double_owned})", flush=True)
    return outcome


async def stable_members(ep: Endpoint, size: int, topics: list[str], partitions: int,
                         interval_s: float) -> tuple[list[ConsumerMember], float]:
    """A stable consumer group of `size` members; they stop heartbeating (the load generator takes over)."""
    running, formed_s = await form_stable(ep.host, ep.port, "bench-consumer-heartbeats", size, topics, partitions,
                                          interval_s, FORM_LIMIT_INTERVALS * interval_s)
    await running.halt()
    if running.view.max_double_owned:
        raise RuntimeError(f"{running.view.max_double_owned} partitions were owned by two members at once")
    if not running.view.is_stable():  # a heartbeat in flight at the stop moved a member
        raise RuntimeError("the group changed after it was stable: " + "; ".join(running.view.unstable()))
    return running.members, formed_s


def render(outcome: Outcome, args: argparse.Namespace) -> tuple[str, dict[str, dict[str, float]]]:
    """The section's text and the figures the summary reads."""
    body, figures = [], {}
    for mode in MODES:
        by_protocol = outcome.heartbeats[mode.key]
        rates = medians(by_protocol)
        ratio = ""
        if "classic" in rates and "consumer" in rates:
            figures[f"consumer_vs_classic_{mode.key}"] = {"ours": 100 * rates["consumer"] / rates["classic"]}
            ratio = f": consumer / classic = {rates['consumer'] / rates['classic']:.2f}"
        header = ["protocol", *summary_header("heartbeats/s")[1:-1]]
        body.append(f"### Heartbeats/s, {args.members}-member group, {mode.label}, {args.reps} interleaved "
                    f"repetitions{ratio}\n\n"
                    + markdown_table(header, [row[:-1] for row in summary_rows(by_protocol)]))
    rows = [[i + 1, f"{c.formation_s:.1f}", f"{c.epoch_before} -> {c.epoch_after}", f"{c.interval_s * 1000:,.0f}",
             f"{c.seconds * 1000:,.0f}", f"{c.intervals:.2f}", c.revoking_members, c.heartbeats, c.max_double_owned]
            for i, c in enumerate(outcome.convergences)]
    summary = ""
    if outcome.convergences:
        intervals = median([c.intervals for c in outcome.convergences])
        figures["consumer_convergence_intervals"] = {"ours": intervals}
        summary = f": median {intervals:.2f} intervals (target <= 2)"
    body.append(f"### Convergence after one member joins a stable {args.members}-member group, "
                f"{args.partitions} partitions in {args.topics} topics{summary}\n\n"
                + markdown_table(["rep", "formation s", "epoch", "interval ms", "converged ms", "intervals",
                                  "members revoking", "heartbeats", "max owned twice"], rows))
    formed = ("" if outcome.consumer_formation_s is None else
              f"\n- The consumer group of the heartbeat runs was stable {outcome.consumer_formation_s:.1f} s "
              "after its first join.")
    body.append(NOTES + formed + "".join(f"\n- {f}" for f in outcome.failures))
    return "\n\n".join(body), figures


NOTES = """Notes:
- One server, both protocols: the classic group (Heartbeat v3) and the consumer group (ConsumerGroupHeartbeat
  v1, steady: member id and epoch, optional fields null / -1) are measured alternately in every repetition.
  The first answer on each connection must carry error code 0 (consumer: also the member's epoch unchanged).
  CPU columns: CPU seconds per wall second (1.00 = one core). Server CPU per heartbeat of each protocol,
  in-process and without the machine's noise, and where the consumer one goes: `python -m
  bench.profile.consumer_heartbeats`.
- Convergence: the simulated members act as the Java client: a heartbeat every interval the server returns,
  counted from the previous send; an answer whose assignment differs from what the member owns is reconciled
  at once (partitions not in it are given up) and acknowledged by a heartbeat sent right away, reporting the
  owned partitions. Timed from the newcomer's join to the answer that leaves every member stable at the new
  epoch. "max owned twice": the most partitions ever owned by two members at once (must be 0).
- Formation (not timed in the convergence figure): the members' first joins are spread over one interval,
  as the members of a real group heartbeat at unrelated moments."""


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = parser_for("bench.bench_consumer_groups", __doc__, timed=True)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=4)
    parser.add_argument("--interval-ms", type=int, default=1000,
                        help="group.consumer.heartbeat.interval.ms (and its minimum) of the server")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    facts = machine_facts()
    pin_to_load_cpu()
    outcome = measure(args)
    text, figures = render(outcome, args)
    print("\n" + text)
    if not args.no_docs:
        write_section("consumer_groups", "Consumer groups (KIP-848): heartbeats/s against classic, convergence "
                      "after a join (bench/bench_consumer_groups.py)",
                      command_line("bench.bench_consumer_groups", argv), facts, text, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
