"""How long session-timer firings hold the event loop when 100,000 members' timers come due together.

    .venv/bin/python -m bench.profile.timer_firings [--members 100000] [--spread-ms 500] [--shards 50] [--reps 3]

Members that joined together have session deadlines close to each other; every session timeout their
timers fire and, the members having heartbeated, re-arm at the new deadline (rebalance.Rebalancer: one
lazy re-arm per member). This arms `members` such timers over `shards` KeyedTimers (one per shard, as
the server has) on a real uvloop loop, deadlines spread over `spread_ms`, each callback re-arming its
key 45 s later, and measures the loop's turns with a 1 ms probe callback: the longest gap between two
probe runs is the longest time no answer could have gone out. Printed with the committed per-turn
budget (coordinator.timers.TurnBudget) and without it (only the 1000-operation batch per firing),
interleaved. In-process, no sockets.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

import uvloop

from coordinator.runtime.timers import FIRING_BUDGET_S, KeyedTimers, LoopScheduler


async def one_run(members: int, spread_ms: float, shards: int, limit_s: float) -> tuple[list[float], float]:
    loop = asyncio.get_running_loop()
    scheduler = LoopScheduler(loop)
    scheduler.turn_budget.limit_s = limit_s
    all_timers = [KeyedTimers(scheduler) for _ in range(shards)]
    fired = [0]

    def rearm(timers: KeyedTimers, group: str, member: str) -> None:
        fired[0] += 1
        timers.schedule_at(("session", group, member), scheduler.now_ms() + 45_000, rearm, timers, group, member)

    rng = random.Random(7)
    start = scheduler.now_ms() + 1500  # after the arming below (~0.3 s)
    for m in range(members):
        timers = all_timers[(m // 10) % shards]  # a group's members live in one shard
        group, member = f"group-{m // 10}", f"member-{m}"
        deadline = start + int(rng.random() * spread_ms)  # whole ms: groups that completed in one loop turn
        timers.schedule_at(("session", group, member), deadline, rearm, timers, group, member)
    gaps: list[float] = []
    last = [time.perf_counter()]

    def probe() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now
        if fired[0] < members:
            loop.call_later(0.001, probe)
        else:
            done.set_result(None)

    done = loop.create_future()
    began = time.perf_counter()
    loop.call_later(0.001, probe)
    await done
    return gaps, time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile.timer_firings", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--spread-ms", type=float, default=500.0)
    parser.add_argument("--shards", type=int, default=50)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    for rep in range(args.reps):
        for label, limit in ((f"turn budget {FIRING_BUDGET_S * 1000:g} ms", FIRING_BUDGET_S),
                             ("batch only", float("inf"))):
            gaps, took = uvloop.run(one_run(args.members, args.spread_ms, args.shards, limit))
            gaps.sort()
            print(f"rep {rep + 1} {label:<20} loop gaps: max {gaps[-1] * 1000:6.2f} ms  "
                  f"p99 {gaps[int(0.99 * len(gaps))] * 1000:5.2f} ms  over 5 ms {sum(g > 0.005 for g in gaps):4d}  "
                  f"all fired in {took:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
