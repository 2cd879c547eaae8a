"""KeyedTimers keeps its own heap under ONE scheduler timer: replace, cancel, stale entries, batches."""

from __future__ import annotations

import gc

import pytest

from coordinator.runtime.timers import FakeScheduler, KeyedTimers


def fresh() -> tuple[FakeScheduler, list, KeyedTimers]:
    clock = FakeScheduler()
    return clock, [], KeyedTimers(clock)


def armed(clock: FakeScheduler) -> list[float]:
    return sorted(entry[0] for entry in clock._heap if not entry[2].cancelled)


def test_one_scheduler_timer_at_the_earliest_deadline():
    clock, got, timers = fresh()
    for i in range(100):
        timers.schedule(("k", i), 50 + i, got.append, i)
    assert armed(clock) == [50]
    timers.schedule("early", 10, got.append, "early")
    assert armed(clock) == [10]  # an earlier deadline re-arms; the old timer is cancelled
    clock.advance(10)
    assert got == ["early"] and armed(clock) == [50]
    clock.advance(1000)
    assert got == ["early", *range(100)] and armed(clock) == [] and len(timers) == 0


def test_replace_runs_only_the_new_operation_at_the_new_deadline():
    clock, got, timers = fresh()
    timers.schedule("k", 10, got.append, "old")
    timers.schedule("k", 30, got.append, "new")
    assert timers.deadline("k") == 30
    clock.advance(20)
    assert got == []  # the stale entry at 10 was skipped
    clock.advance(10)
    assert got == ["new"] and "k" not in timers


def test_replace_with_an_earlier_deadline():
    clock, got, timers = fresh()
    timers.schedule("k", 30, got.append, "late")
    timers.schedule("k", 5, got.append, "early")
    clock.advance(100)
    assert got == ["early"]


def test_cancel_leaves_a_stale_entry_that_never_runs():
    clock, got, timers = fresh()
    timers.schedule("a", 10, got.append, "a")
    timers.schedule("b", 20, got.append, "b")
    timers.cancel("a")
    timers.cancel("missing")
    assert "a" not in timers and timers.deadline("a") is None and len(timers) == 1
    clock.advance(100)
    assert got == ["b"] and clock.pending() == 0


def test_cancel_all_disarms():
    clock, got, timers = fresh()
    timers.schedule("a", 10, got.append, "a")
    timers.cancel_all()
    assert clock.pending() == 0 and len(timers) == 0
    timers.schedule("b", 5, got.append, "b")
    clock.advance(100)
    assert got == ["b"]


def test_many_keys_with_the_same_deadline_run_in_scheduling_order_in_one_firing():
    clock, got, timers = fresh()
    for i in range(1000):
        timers.schedule(("session", "g", str(i)), 45_000, got.append, i)
    clock.advance(44_999)
    assert got == []
    clock.advance(1)
    assert got == list(range(1000)) and clock.pending() == 0


def test_a_callback_scheduling_another_key():
    clock, got, timers = fresh()

    def first() -> None:
        got.append(("first", clock.now_ms()))
        timers.schedule("second", 0, lambda: got.append(("second", clock.now_ms())))
        timers.schedule("later", 15, lambda: got.append(("later", clock.now_ms())))

    timers.schedule("first", 10, first)
    clock.advance(10)
    assert got == [("first", 10), ("second", 10)]  # due at once: runs within the same advance
    clock.advance(100)
    assert got[-1] == ("later", 25) and len(timers) == 0


def test_a_callback_rescheduling_itself_at_once_does_not_spin_within_one_firing():
    clock, runs = FakeScheduler(), []
    timers = KeyedTimers(clock)

    def again() -> None:
        runs.append(clock.now_ms())
        if len(runs) < 3:
            timers.schedule("k", 0, again)

    timers.schedule("k", 1, again)
    clock.advance(1)
    assert runs == [1, 1, 1]


def test_a_callback_cancelling_a_key_due_in_the_same_firing():
    clock, got, timers = fresh()
    timers.schedule("a", 10, lambda: (got.append("a"), timers.cancel("b")))
    timers.schedule("b", 10, got.append, "b")
    clock.advance(10)
    assert got == ["a"]


def test_errors_in_a_callback_do_not_stop_the_others():
    clock, got, errors = FakeScheduler(), [], []
    timers = KeyedTimers(clock, on_error=lambda key, exc: errors.append((key, str(exc))))

    def boom() -> None:
        raise RuntimeError("boom")

    timers.schedule("a", 10, got.append, "a")
    timers.schedule("b", 10, boom)
    timers.schedule("c", 10, got.append, "c")
    timers.schedule("d", 20, got.append, "d")
    clock.advance(100)
    assert got == ["a", "c", "d"] and errors == [("b", "boom")]


def test_what_a_callback_returns_goes_to_on_result_and_a_failing_on_result_to_on_error():
    """A shard's timers hand a group timer operation's records to the shard to write."""
    clock, results, errors = FakeScheduler(), [], []

    def on_result(result: object) -> None:
        if result == "bad":
            raise RuntimeError("write failed")
        results.append(result)

    timers = KeyedTimers(clock, on_error=lambda key, exc: errors.append((key, str(exc))), on_result=on_result)
    timers.schedule("a", 10, lambda: "records of a")
    timers.schedule("b", 10, lambda: None)  # nothing to write: on_result is not called
    timers.schedule("c", 10, lambda: "bad")
    timers.schedule("d", 10, lambda: "records of d")
    clock.advance(10)
    assert results == ["records of a", "records of d"] and errors == [("c", "write failed")]


def test_without_on_error_the_first_error_is_raised_after_the_others_ran_and_timers_rearmed():
    clock, got, timers = fresh()
    timers.schedule("a", 10, lambda: 1 / 0)
    timers.schedule("b", 10, got.append, "b")
    timers.schedule("c", 20, got.append, "c")
    with pytest.raises(ZeroDivisionError):
        clock.advance(10)
    assert got == ["b"]
    clock.advance(10)
    assert got == ["b", "c"]


def test_stale_entries_are_compacted_when_they_outnumber_live_ones():
    clock = FakeScheduler()
    timers = KeyedTimers(clock)
    for i in range(20_000):
        timers.schedule("join", 1000 + i, print)  # replaced every time: all but one go stale
    assert len(timers) == 1 and len(timers._heap) < 3000
    assert timers.deadline("join") == 1000 + 19_999


def test_heap_entries_hold_no_gc_tracked_object():
    clock = FakeScheduler()
    timers = KeyedTimers(clock)
    callback = print
    for i in range(100):
        timers.schedule_at(("session", "group", f"member-{i}"), 1000.0 + i, callback, "group", f"member-{i}")
    gc.collect()
    gc.collect()  # a tuple is untracked once its items are: the inner key tuple goes first
    assert not any(gc.is_tracked(entry) for entry in timers._heap)
    assert not any(gc.is_tracked(args) for args in timers._args.values())


def test_one_firing_runs_at_most_a_batch_and_re_arms_for_the_rest():
    clock, got, timers = fresh()
    timers.batch = 3
    for i in range(7):
        timers.schedule(("session", "g", str(i)), 10, got.append, i)
    clock._now = 10
    timers._fire()  # as the loop would: one firing
    assert got == [0, 1, 2] and timers._armed_ms == 10  # the rest is due at once: the next loop turn
    clock.advance(0)
    assert got == list(range(7)) and clock.pending() == 0


def test_a_firing_slightly_early_still_runs_what_it_was_armed_for():
    """An event loop runs a timer up to its clock resolution early; that must not re-arm in a spin."""
    clock, got, timers = fresh()
    timers.schedule("k", 10, got.append, "k")
    timers.schedule("later", 11, got.append, "later")
    clock._now = 9.999
    timers._fire()
    assert got == ["k"] and timers._armed_ms == 11
