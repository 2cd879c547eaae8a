"""Timer firings stop once their loop turn's budget is spent and leave the rest for the next turn.

All KeyedTimers of one scheduler (one per shard) share its TurnBudget: 50 shards whose session
timers come due in the same loop turn hold the loop for about one budget, not fifty.
"""

from __future__ import annotations

import asyncio

import uvloop

from coordinator.runtime.timers import FakeScheduler, KeyedTimers, LoopScheduler


class WorkClock:
    """Real time as the firings see it: each operation the test runs costs what the test says."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def slow_setup(shards: int, per_shard: int, cost_s: float, deadline: float = 10.0):
    clock, work, ran = FakeScheduler(), WorkClock(), []
    clock.turn_budget.work_clock = work
    all_timers = [KeyedTimers(clock) for _ in range(shards)]

    def operation(shard: int, i: int) -> None:
        ran.append((shard, i))
        work.now += cost_s

    for shard, timers in enumerate(all_timers):
        for i in range(per_shard):
            timers.schedule_at(("session", "g", i), deadline, operation, shard, i)
    clock._now = deadline
    return clock, all_timers, ran


def test_a_firing_stops_once_the_budget_is_spent_and_re_arms_at_once():
    clock, (timers,), ran = slow_setup(1, 200, cost_s=0.0001)  # 0.1 ms each: ten fill the 1 ms budget
    timers._fire()
    assert ran == [(0, i) for i in range(10)]  # in deadline (scheduling) order
    assert timers._armed_ms == 10.0  # the rest is due: the next loop turn fires again
    clock.advance(0)
    assert ran == [(0, i) for i in range(200)] and len(timers) == 0


def test_shards_firing_in_one_turn_share_the_budget():
    clock, shards, ran = slow_setup(5, 100, cost_s=0.0001)
    for timers in shards:  # one loop turn: every shard's timer is due
        timers._fire()
    # the first shard spends the turn's budget; each later one runs one operation and re-arms
    assert len(ran) == 10 + 4 and all(timers._armed_ms == 10.0 for timers in shards)
    clock.advance(0)  # the next turns: the budget starts again after the scheduler's call_soon
    assert sorted(ran) == [(s, i) for s in range(5) for i in range(100)]


def test_cheap_operations_are_bounded_by_the_batch_not_the_budget():
    clock, (timers,), ran = slow_setup(1, 1500, cost_s=0.0)
    timers._fire()
    assert len(ran) == 1000
    clock.advance(0)
    assert len(ran) == 1500


def test_an_operation_slower_than_the_budget_still_lets_each_firing_progress():
    clock, (timers,), ran = slow_setup(1, 40, cost_s=0.01)  # each ten times the budget
    clock.advance(0)
    assert ran == [(0, i) for i in range(40)] and len(timers) == 0


def test_a_larger_budget_runs_more_per_turn():
    clock, (timers,), ran = slow_setup(1, 200, cost_s=0.0001)
    clock.turn_budget.limit_s = 0.005
    timers._fire()
    assert len(ran) == 50


async def _loop_turns() -> tuple[float | None, float | None]:
    scheduler = LoopScheduler(asyncio.get_running_loop())
    budget = scheduler.turn_budget
    first = budget.stop_at()
    same_turn = budget.stop_at()
    await asyncio.sleep(0)  # the call_soon ran: a new turn
    return first == same_turn, budget._stop_at


def test_on_an_event_loop_the_budget_lasts_until_the_loop_runs_its_ready_callbacks():
    same_turn, after = uvloop.run(_loop_turns())
    assert same_turn is True and after is None
    same_turn, after = asyncio.run(_loop_turns())
    assert same_turn is True and after is None
