"""Completion (settling, deriving with `then`), and how a connection delivers answers settled outside the loop."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.completion import Completion
from coordinator.net.dispatch import Deferred
from protocol.framing import frame
from tests.support.connection import answer, make_connection


def test_waiters_run_at_once_when_settled_and_the_first_settle_wins():
    late = Completion()
    seen: list = []
    late.add_done_callback(lambda a: seen.append(("first", a.result())))
    late.add_done_callback(lambda a: seen.append(("second", a.result())))
    assert not late.done() and seen == []
    with pytest.raises(asyncio.InvalidStateError):
        late.result()
    with pytest.raises(asyncio.InvalidStateError):
        late.exception()
    late.set_result(1)
    assert seen == [("first", 1), ("second", 1)]  # synchronously, in order
    late.set_result(2)
    late.set_exception(RuntimeError("late"))
    assert late.result() == 1 and late.exception() is None and not late.cancelled()
    late.add_done_callback(lambda a: seen.append(("after", a.result())))
    assert seen[-1] == ("after", 1)  # a waiter added when settled runs at once


def test_a_failing_waiter_does_not_starve_the_others_and_removed_waiters_do_not_run():
    late = Completion()
    seen: list = []

    def broken(_a):
        raise RuntimeError("boom")

    def removed(_a):
        seen.append("removed")

    late.add_done_callback(broken)
    late.add_done_callback(removed)
    late.add_done_callback(lambda a: seen.append("kept"))
    assert late.remove_done_callback(removed) == 1
    assert late.remove_done_callback(removed) == 0
    late.set_exception(ValueError("bad"))
    assert seen == ["kept"]
    assert isinstance(late.exception(), ValueError)
    with pytest.raises(ValueError):
        late.result()


async def test_await_gives_the_value_or_raises():
    late = Completion()
    asyncio.get_running_loop().call_soon(late.set_result, "v")
    assert await late == "v"
    assert await late == "v"  # settled: no future needed
    failed = Completion()
    asyncio.get_running_loop().call_soon(failed.set_exception, KeyError("k"))
    with pytest.raises(KeyError):
        await failed


def test_then_settles_with_ok_failed_or_their_exception():
    written = Completion()
    ok = written.then(lambda a, b, _value: a + b, lambda a, b, error: (a, b, str(error)), 1, 2)
    assert not ok.done()
    written.set_result(None)
    assert ok.result() == 3
    refused = Completion()
    refused.set_exception(OSError("disk"))
    failed = refused.then(lambda a, b, _value: a + b, lambda a, b, error: (a, b, str(error)), 1, 2)
    assert failed.result() == (1, 2, "disk")  # derived from a settled one: settled at once

    def explode(*_args) -> None:
        raise RuntimeError("encoding failed")

    broken = written.then(explode, explode)
    assert isinstance(broken.exception(), RuntimeError)
    passed_on = refused.then(explode)  # no `failed`: the same error
    assert isinstance(passed_on.exception(), OSError)


def test_a_cancelled_completion_drops_its_answer():
    late = Completion()
    seen: list = []
    late.add_done_callback(seen.append)
    assert late.cancel() and late.cancelled() and seen == [late]
    late.set_result("late")
    with pytest.raises(asyncio.CancelledError):
        late.result()
    assert not late.cancel()


async def test_a_connection_delivers_late_answers_together_on_the_next_loop_callback():
    connection, transport, _dispatcher = make_connection(**{"queued.max.requests": "10"})
    lates = [Completion() for _ in range(3)]
    for i, late in enumerate(lates):
        connection.hold(Deferred(late, i + 1, 0, "test"), 0)
    writes = []
    original = transport.write
    transport.write = lambda data: (writes.append(data), original(data))  # type: ignore[method-assign]
    for tag, late in zip("abc", lates):
        late.set_result(answer(tag))
    assert transport.hosts() == []  # settled synchronously; delivered on the next loop callback
    await asyncio.sleep(0)
    assert transport.hosts() == ["a", "b", "c"]
    assert len(writes) == 1  # one write for the three


async def test_a_delivery_scheduled_before_the_connection_is_lost_does_nothing():
    connection, transport, dispatcher = make_connection(**{"queued.max.requests": "10"})
    late = Completion()
    connection.hold(Deferred(late, 1, 0, "test"), 0)
    late.set_result(answer("a"))  # schedules the delivery
    connection.buffer += frame(b"Sb")  # a request that arrived just before the peer left
    connection.connection_lost(None)
    await asyncio.sleep(0)
    assert transport.hosts() == [] and dispatcher.seen == []  # nothing answered, nothing dispatched
