"""Issue 13 follow-up (red team a10): a connection that has dispatched for more than its budget
of loop time in one go leaves the rest of its pipelined frames to a later loop turn, so other
connections are served in between; its answers still leave in request order. A fake clock that
the handler advances stands in for expensive requests (no sleeps)."""

from __future__ import annotations

import asyncio

from coordinator.net.connection import DISPATCH_BUDGET_SECONDS, Connection
from protocol.framing import frame
from tests.support.connection import FakeDispatcher, FakeTransport, answer, make_connection

COST = 0.010  # what each frame "burns" on the fake clock: two of them pass the 15 ms budget


class BurningDispatcher(FakeDispatcher):
    """FakeDispatcher whose every frame advances a fake clock by COST seconds."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def dispatch(self, data: bytes, host: str, port: int, session: object = None):
        self.now += COST
        return super().dispatch(data, host, port)


def burning_pair() -> tuple[tuple[Connection, FakeTransport], tuple[Connection, FakeTransport], BurningDispatcher]:
    connection, transport, _ = make_connection(**{"queued.max.requests": "100"})
    server = connection.server
    dispatcher = BurningDispatcher()
    server.dispatcher = connection.dispatcher = dispatcher
    server.clock = dispatcher.clock
    other = Connection(server)
    other_transport = FakeTransport()
    other.connection_made(other_transport)
    return (connection, transport), (other, other_transport), dispatcher


async def test_a_connection_past_its_budget_lets_another_one_in_and_keeps_its_order():
    assert COST < DISPATCH_BUDGET_SECONDS < 2 * COST
    (greedy, greedy_out), (polite, polite_out), dispatcher = burning_pair()
    greedy.data_received(b"".join(frame(b"S%d" % i) for i in range(6)))
    assert dispatcher.seen == ["0", "1"]  # the second frame spent the budget
    assert greedy_out.paused and greedy.buffer  # four frames wait, reading paused meanwhile
    polite.data_received(frame(b"Sp") + frame(b"Sq"))  # the same loop turn: served at once
    assert dispatcher.seen == ["0", "1", "p", "q"]
    assert polite_out.hosts() == ["p", "q"]
    await asyncio.sleep(0)  # the greedy connection's next turn: two more
    assert dispatcher.seen[4:] == ["2", "3"]
    await asyncio.sleep(0)
    assert greedy_out.hosts() == ["0", "1", "2", "3", "4", "5"]
    assert not greedy_out.paused and not greedy.buffer and not greedy.resume_scheduled


async def test_frames_read_while_a_turn_is_yielded_wait_behind_the_buffered_ones():
    (greedy, greedy_out), _, dispatcher = burning_pair()
    greedy.data_received(frame(b"S0") + frame(b"S1") + frame(b"S2"))
    greedy.data_received(frame(b"S3"))  # a read already under way when reading paused
    greedy.data_received(frame(b"Da"))  # a deferred answer in the queue too
    assert dispatcher.seen == ["0", "1"]
    for _ in range(3):
        await asyncio.sleep(0)
    assert dispatcher.seen == ["0", "1", "2", "3", "a"]
    dispatcher.futures["a"].set_result(answer("a"))
    await asyncio.sleep(0)
    assert greedy_out.hosts() == ["0", "1", "2", "3", "a"]


async def test_a_connection_gone_while_its_turn_is_yielded_is_left_alone():
    (greedy, greedy_out), _, dispatcher = burning_pair()
    greedy.data_received(frame(b"S0") + frame(b"S1") + frame(b"S2"))
    greedy.connection_lost(None)
    await asyncio.sleep(0)
    assert dispatcher.seen == ["0", "1"]
