"""Issue 13 defect 6: any failure on the answer path closes the connection (logged once)
instead of dropping the answer silently and leaving the client to its own timeout."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v0.response import FindCoordinatorResponse

from coordinator.net.dispatch import CloseConnection, Deferred, Dispatcher
from protocol.apis import ApiKey
from protocol.framing import frame
from tests.support.connection import answer, make_connection
from tests.support.data_plane import req
from tests.support.wire_client import request_frame

TOO_LONG = "x" * 40_000  # past a legacy (int16-length) string


async def test_a_deferred_answer_that_does_not_encode_closes_the_connection():
    connection, transport, dispatcher = make_connection()
    connection.data_received(frame(b"Da") + frame(b"Db"))
    dispatcher.futures["b"].set_result(answer("b"))
    dispatcher.futures["a"].set_result(answer(TOO_LONG))
    await asyncio.sleep(0)
    assert transport.closed
    assert connection.close_reason.startswith("protocol violation: the test response does not encode")


async def test_any_failure_while_delivering_closes_the_connection(monkeypatch):
    connection, transport, dispatcher = make_connection()
    connection.data_received(frame(b"Da"))

    def broken(deferred, metrics=None):
        raise RuntimeError("bug")
    monkeypatch.setattr(Dispatcher, "finish", staticmethod(broken))
    dispatcher.futures["a"].set_result(answer("a"))
    await asyncio.sleep(0)
    assert transport.closed and "RuntimeError('bug')" in connection.close_reason


async def test_a_dispatcher_bug_closes_the_connection_instead_of_escaping():
    connection, transport, dispatcher = make_connection()

    def broken(data, host, port):
        raise KeyError("bug")
    dispatcher.dispatch = broken
    connection.data_received(frame(b"Sa"))  # the one-frame path
    assert transport.closed
    connection, transport, dispatcher = make_connection()
    dispatcher.dispatch = broken
    connection.data_received(frame(b"Sa") + frame(b"Sb"))  # the buffered path
    assert transport.closed


def test_a_synchronous_answer_that_does_not_encode_is_a_close_not_an_exception():
    dispatcher = Dispatcher()
    dispatcher.register(ApiKey.FIND_COORDINATOR, lambda ctx, request: FindCoordinatorResponse(
        error_code=ErrorCode.none, node_id=1, host=TOO_LONG, port=1))
    request = req(ApiKey.FIND_COORDINATOR, 0, key="g")
    with pytest.raises(CloseConnection, match="does not encode"):
        dispatcher.dispatch(request_frame(request, 7)[4:], "127.0.0.1", 1)


async def test_finish_of_a_deferred_that_does_not_encode_raises_close():
    future = asyncio.get_running_loop().create_future()
    future.set_result(answer(TOO_LONG))
    with pytest.raises(CloseConnection):
        Dispatcher.finish(Deferred(future, 1, 0, "FindCoordinator"))
