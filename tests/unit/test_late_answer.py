"""LateAnswer / WriteAnswer, and how a connection delivers answers settled outside the loop."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.completion import LateAnswer, WriteAnswer
from coordinator.net.dispatch import Deferred
from protocol.framing import frame
from tests.unit.test_connection import answer, make_connection


def test_waiters_run_at_once_when_settled_and_the_first_settle_wins():
    late = LateAnswer()
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
    late = LateAnswer()
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
    late = LateAnswer()
    asyncio.get_running_loop().call_soon(late.set_result, "v")
    assert await late == "v"
    assert await late == "v"  # settled: no future needed
    failed = LateAnswer()
    asyncio.get_running_loop().call_soon(failed.set_exception, KeyError("k"))
    with pytest.raises(KeyError):
        await failed


def test_write_answer_settles_with_ok_failed_or_their_exception():
    ok = WriteAnswer(lambda a, b: a + b, lambda a, b, error: (a, b, str(error)), (1, 2))
    ok(None)
    assert ok.result() == 3
    failed = WriteAnswer(lambda a, b: a + b, lambda a, b, error: (a, b, str(error)), (1, 2))
    failed(OSError("disk"))
    assert failed.result() == (1, 2, "disk")

    def explode() -> None:
        raise RuntimeError("encoding failed")

    broken = WriteAnswer(explode, explode)
    broken(None)
    assert isinstance(broken.exception(), RuntimeError)


async def test_a_connection_delivers_late_answers_together_on_the_next_loop_callback():
    connection, transport, _dispatcher = make_connection(**{"queued.max.requests": "10"})
    lates = [LateAnswer() for _ in range(3)]
    for i, late in enumerate(lates):
        deferred = Deferred(late, i + 1, 0, "test")
        connection.pending.append(deferred)
        late.add_done_callback(connection._deferred_done)
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
    late = LateAnswer()
    connection.pending.append(Deferred(late, 1, 0, "test"))
    late.add_done_callback(connection._deferred_done)
    late.set_result(answer("a"))  # schedules the delivery
    connection.buffer += frame(b"Sb")  # a request that arrived just before the peer left
    connection.connection_lost(None)
    await asyncio.sleep(0)
    assert transport.hosts() == [] and dispatcher.seen == []  # nothing answered, nothing dispatched
