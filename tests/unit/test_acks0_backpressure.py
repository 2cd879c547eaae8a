"""Issue 13 defect 5: an acks=0 Produce stays outstanding on its connection until its appends
are written, so a connection with queued.max.requests of them unwritten stops being read
(memory no longer grows without bound while the disk is slower than the network)."""

from __future__ import annotations

import asyncio
import threading

import pytest

import storage.flush
from coordinator.net.dispatch import Deferred
from protocol.apis import ApiKey
from protocol.framing import frame
from tests.support.connection import answer, connect, make_connection, settle
from tests.support.data_plane import Plane, batch, ms, req
from tests.support.wire_client import request_frame


@pytest.fixture
def slow_disk(monkeypatch):
    """Flush jobs wait until the test sets the event (a disk slower than the network)."""
    gate = threading.Event()
    run_job = storage.flush.run_job

    def held(*args):
        gate.wait(10)
        return run_job(*args)
    monkeypatch.setattr(storage.flush, "run_job", held)
    yield gate
    gate.set()


def produce0(n: int):
    return req(ApiKey.PRODUCE, 9, acks=0, timeout=ms(5000), transactional_id=None,
               topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": batch(b"v%d" % n)}]}])


async def test_an_unwritten_acks0_produce_is_outstanding_and_silent(tmp_path, slow_disk):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        out = plane.send(produce0(1))
        assert isinstance(out, Deferred) and not out.future.done()
        slow_disk.set()
        assert await plane.resolve(produce0(1), out) is None  # written, and still no answer


async def test_reading_pauses_at_queued_max_requests_unwritten_acks0_requests(tmp_path, slow_disk):
    async with Plane(str(tmp_path), **{"queued.max.requests": "2"}) as plane:
        await plane.create("t")
        connection, transport = connect(plane)
        connection.data_received(b"".join(request_frame(produce0(i), i) for i in range(5)))
        assert transport.paused and len(connection.pending) == 2 and connection.buffer
        slow_disk.set()
        await settle(lambda: not connection.buffer and not connection.pending)
        assert not transport.paused and transport.written == b""
        assert plane.data.partition("t", 0).log.log_end_offset == 5
        connection.connection_lost(None)


async def test_a_failed_acks0_write_closes_the_connection(tmp_path, monkeypatch):
    def broken(*args):
        raise OSError("disk gone")
    monkeypatch.setattr(storage.flush, "run_job", broken)
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        connection, transport = connect(plane)
        connection.data_received(frame(request_frame(produce0(1), 1)[4:]))
        await settle(lambda: transport.closed)
        assert "was not written" in connection.close_reason


async def test_reading_pauses_once_outstanding_requests_add_up_to_the_byte_bound():
    connection, transport, dispatcher = make_connection(**{
        "queued.max.requests": "100", "queued.max.request.bytes.per.connection": "100"})
    connection.data_received(frame(b"D" + b"a" * 59) + frame(b"D" + b"b" * 59) + frame(b"Sc"))
    assert len(dispatcher.seen) == 2 and transport.paused  # 120 bytes outstanding: "c" waits
    assert connection.pending_bytes == 120
    dispatcher.futures["a" * 59].set_result(answer("a"))
    await asyncio.sleep(0)
    assert connection.pending_bytes == 60 and len(dispatcher.seen) == 3 and not transport.paused
    dispatcher.futures["b" * 59].set_result(answer("b"))
    await asyncio.sleep(0)
    assert connection.pending_bytes == 0 and transport.hosts() == ["a", "b", "c"]


async def test_one_request_over_the_byte_bound_is_still_read(tmp_path, slow_disk):
    async with Plane(str(tmp_path), **{"queued.max.request.bytes.per.connection": "10"}) as plane:
        await plane.create("t")
        connection, transport = connect(plane)
        connection.data_received(b"".join(request_frame(produce0(i), i) for i in range(3)))
        assert transport.paused and len(connection.pending) == 1  # the first, unwritten: the rest wait
        slow_disk.set()
        await settle(lambda: not connection.buffer and not connection.pending)
        assert not transport.paused and plane.data.partition("t", 0).log.log_end_offset == 3
        connection.connection_lost(None)
