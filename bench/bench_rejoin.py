"""Rejoin time of a 50-member group after one member leaves.

    .venv/bin/python -m bench.bench_rejoin [--servers ours,tansu,noida-db,rdkafka-mock] [--reps 3]
        [--size 50] [--interval-ms 200] [--no-docs]

Each rep, for each server in turn (A B C A B C): `--size` members (bench/lib/members.py, one connection
each, 10 s sessions) form a group, then heartbeat every `--interval-ms` (a short heartbeat interval,
so that runs are quick; Kafka's default is 3 s), phases spread evenly over the interval. After two
intervals one follower sends LeaveGroup. Every other member learns of the rebalance from its next
heartbeat (REBALANCE_IN_PROGRESS), rejoins, and syncs (the leader sends its SyncGroup once every
follower's is on the wire: librdkafka's mock needs that order). Timed: from the LeaveGroup to the
moment every remaining member has its SyncGroup answer for the new generation. The target is one
heartbeat interval + 20 ms. Members run on core 1, servers on core 0; bounded by LIMIT_S.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.leave_group.v1.request import LeaveGroupRequest

from bench.lib.compare import parser_for, pin_to_load_cpu, server_names, servers, wire_port
from bench.lib.members import AsyncMember, form_group
from bench.lib.report import command_line, machine_facts, markdown_table, median, write_section

LIMIT_S = 60.0


async def timed_rejoin(host: str, port: int, group: str, size: int, interval: float) -> float:
    members = await form_group(host, port, group, size)
    try:
        old = members[0].generation
        leader = next(m for m in members if m.member_id == m.leader)
        leaver = next(m for m in members if m is not leader)
        stayers = [m for m in members if m is not leaver]
        followers_sent = [asyncio.Event() for m in stayers if m is not leader]
        all_followers_sent = asyncio.Event()
        done: dict[int, float] = {}

        async def follower_sent(event: asyncio.Event) -> None:
            await event.wait()
            if all(e.is_set() for e in followers_sent):
                all_followers_sent.set()

        async def live(m: AsyncMember, phase: float, sent: asyncio.Event | None) -> None:
            await asyncio.sleep(phase)
            while True:
                code = await m.heartbeat(m.generation)
                if code is ErrorCode.rebalance_in_progress:
                    break
                if code is not ErrorCode.none:
                    raise RuntimeError(f"Heartbeat of member {m.index}: {code.name}")
                await asyncio.sleep(interval)
            await m.join(newer_than=old)
            if sent is None:  # the leader
                await all_followers_sent.wait()
            await m.sync(sent)
            done[m.index] = time.perf_counter()

        watchers = [asyncio.ensure_future(follower_sent(e)) for e in followers_sent]
        events = iter(followers_sent)
        tasks = [asyncio.ensure_future(live(m, i * interval / size, None if m is leader else next(events)))
                 for i, m in enumerate(stayers)]
        try:
            await asyncio.sleep(2 * interval)
            if any(t.done() for t in tasks):
                await asyncio.gather(*tasks)  # raises what went wrong
                raise RuntimeError("a member rebalanced before anyone left")
            started = time.perf_counter()
            answer = await leaver.call(LeaveGroupRequest(group_id=group, member_id=leaver.member_id))
            if answer.error_code is not ErrorCode.none:
                raise RuntimeError(f"LeaveGroup: {answer.error_code.name}")
            await asyncio.gather(*tasks)
        finally:
            for t in [*tasks, *watchers]:
                t.cancel()
        if {m.generation for m in stayers} == {old}:
            raise RuntimeError("no new generation")
        return max(done.values()) - started
    finally:
        for m in members:
            m.close()


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("bench.bench_rejoin", __doc__)
    parser.add_argument("--size", type=int, default=50)
    parser.add_argument("--interval-ms", type=int, default=200)
    args = parser.parse_args(argv)
    names = server_names(args)
    facts = machine_facts()
    pin_to_load_cpu()
    failures: list[str] = []
    times: dict[str, list[float]] = {n: [] for n in names}
    with servers(names, failures) as endpoints:
        for rep in range(args.reps):
            for name, ep in endpoints.items():
                try:
                    elapsed = asyncio.run(asyncio.wait_for(timed_rejoin(
                        ep.host, wire_port(ep), f"bench-rejoin-{rep}", args.size, args.interval_ms / 1000), LIMIT_S))
                except TimeoutError:
                    failures.append(f"{name} rep {rep + 1}: no rejoin within {LIMIT_S:.0f} s")
                    continue
                except Exception as exc:  # report and go on with the other servers
                    failures.append(f"{name} rep {rep + 1}: {type(exc).__name__}: {exc}")
                    continue
                times[name].append(elapsed * 1000)
                print(f"rep {rep + 1} {name:<13} {elapsed * 1000:,.0f} ms", flush=True)
    target = args.interval_ms + 20
    rows: list[list[Any]] = []
    for name in names:
        t = times[name]
        rows.append([name, f"{median(t):,.0f}", f"{min(t):,.0f}-{max(t):,.0f}",
                     "yes" if median(t) <= target else "no"] if t else [name, "failed", "", ""])
    text = (f"{args.size}-member group, heartbeat interval {args.interval_ms} ms, one follower leaves; "
            f"{args.reps} interleaved repetitions; target <= {target} ms (interval + 20 ms):\n\n"
            + markdown_table(["server", "median ms", "min-max ms", f"<= {target} ms"], rows)
            + "\n\n" + NOTES + "".join(f"\n- {f}" for f in failures))
    print("\n" + text)
    figures = {"rejoin_ms": {n: median(t) for n, t in times.items() if t},
               "context": {"interval_ms": float(args.interval_ms)}}
    if not args.no_docs:
        write_section("rejoin", "Rejoin after a member leaves (bench/bench_rejoin.py)",
                      command_line("bench.bench_rejoin", argv),
                      facts, text, figures)
    return 0


NOTES = """Notes:
- The lower bound for any server is about one interval: the last member to heartbeat after the leave
  learns of the rebalance up to one interval later. What remains is the server's join completion and
  sync, plus one round trip per step.
- The rdkafka mock waits for the session timeout of members that did not rejoin before it completes a
  join, and elects leaders late; tansu rebalances slowly: failures and timeouts are listed below."""


if __name__ == "__main__":
    sys.exit(main())
