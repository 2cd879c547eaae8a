"""Connection ordering and back-pressure with a fake transport (no sockets, no sleeps)."""

from __future__ import annotations

import asyncio
import struct

from protocol.framing import frame
from tests.support.connection import answer, make_connection


async def test_responses_leave_in_request_order():
    connection, transport, dispatcher = make_connection(**{"queued.max.requests": "10"})
    connection.data_received(frame(b"Da") + frame(b"Sb") + frame(b"Dc") + frame(b"Sd"))
    assert transport.hosts() == []  # "b" waits behind the unfinished "a"
    dispatcher.futures["c"].set_result(answer("c"))
    await asyncio.sleep(0)
    assert transport.hosts() == []
    dispatcher.futures["a"].set_result(answer("a"))
    await asyncio.sleep(0)
    assert transport.hosts() == ["a", "b", "c", "d"]


async def test_reading_pauses_at_the_in_flight_bound_and_resumes():
    connection, transport, dispatcher = make_connection()
    connection.data_received(frame(b"Da") + frame(b"Db") + frame(b"Sc"))
    assert dispatcher.seen == ["a", "b"]  # "c" stays buffered: two responses outstanding
    assert transport.paused
    dispatcher.futures["a"].set_result(answer("a"))
    await asyncio.sleep(0)
    assert dispatcher.seen == ["a", "b", "c"]
    assert transport.paused  # "c" is answered but waits behind "b": still two outstanding
    dispatcher.futures["b"].set_result(answer("b"))
    await asyncio.sleep(0)
    assert transport.hosts() == ["a", "b", "c"]
    assert not transport.paused


async def test_reading_pauses_while_the_transport_is_full():
    connection, transport, dispatcher = make_connection()
    connection.pause_writing()
    assert transport.paused
    connection.data_received(frame(b"Sa"))
    assert dispatcher.seen == []
    connection.resume_writing()
    assert dispatcher.seen == ["a"] and not transport.paused
    assert transport.hosts() == ["a"]


async def test_a_violation_flushes_earlier_answers_then_closes():
    connection, transport, dispatcher = make_connection()
    connection.data_received(frame(b"Sa") + frame(b"X") + frame(b"Sb"))
    assert transport.hosts() == ["a"]
    assert transport.closed and dispatcher.seen == ["a", ""]


async def test_a_failing_deferred_handler_closes_the_connection():
    connection, transport, dispatcher = make_connection()
    connection.data_received(frame(b"Da"))
    dispatcher.futures["a"].set_exception(RuntimeError("boom"))
    await asyncio.sleep(0)
    assert transport.closed


async def test_graceful_close_waits_for_outstanding_responses():
    connection, transport, dispatcher = make_connection()
    connection.data_received(frame(b"Da"))
    connection.begin_close()
    assert transport.paused and not transport.closed
    dispatcher.futures["a"].set_result(answer("a"))
    await asyncio.sleep(0)
    assert transport.hosts() == ["a"] and transport.closed


async def test_oversized_frame_closes():
    connection, transport, _ = make_connection(**{"socket.request.max.bytes": "10"})
    connection.data_received(struct.pack(">i", 11))
    assert transport.closed


async def test_one_frame_per_read_is_answered_at_once_or_waits_behind_a_pending_answer():
    connection, transport, dispatcher = make_connection(**{"queued.max.requests": "10"})
    connection.data_received(frame(b"Sa"))  # nothing queued: answered straight away
    assert transport.hosts() == ["a"] and not connection.buffer
    connection.data_received(frame(b"Db"))
    connection.data_received(frame(b"Sc"))  # "b" is pending: "c" waits behind it
    assert transport.hosts() == ["a"]
    dispatcher.futures["b"].set_result(answer("b"))
    await asyncio.sleep(0)
    assert transport.hosts() == ["a", "b", "c"]


async def test_one_oversized_or_bad_frame_per_read_still_closes():
    connection, transport, _ = make_connection(**{"socket.request.max.bytes": "10"})
    connection.data_received(frame(b"X" * 11))
    assert transport.closed
    connection, transport, _ = make_connection()
    connection.data_received(frame(b"X"))  # the dispatcher refuses it
    assert transport.closed
