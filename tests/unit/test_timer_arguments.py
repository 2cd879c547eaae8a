"""Schedulers pass positional arguments to the callback (KeyedTimers arms with arguments, not closures)."""

from __future__ import annotations

import asyncio

from coordinator.runtime.timers import FakeScheduler, KeyedTimers, LoopScheduler


async def test_loop_scheduler_passes_arguments():
    loop = asyncio.get_running_loop()
    scheduler = LoopScheduler(loop)
    got = []
    scheduler.call_at_ms(scheduler.now_ms(), lambda *args: got.append(args), "key", 2)
    for _ in range(3):  # a due timer runs within a few loop iterations; no time passes
        await asyncio.sleep(0)
    assert got == [("key", 2)]


def test_fake_scheduler_passes_arguments_and_keyed_timers_arm_without_a_closure():
    clock = FakeScheduler()
    got = []
    clock.call_at_ms(5, lambda *args: got.append(args), "a", "b")
    timers = KeyedTimers(clock)
    timers.schedule(("session", "g", "m"), 5, got.append, "fired")
    _when, _seq, _handle, callback, args = clock._heap[-1]
    assert callback == timers._fire and args == ()  # one scheduler timer for all keys, no per-key closure
    clock.advance(5)
    assert got == [("a", "b"), "fired"]
