"""Issue 13 follow-up (red team a11): a parked Fetch is released when its connection closes
(its watchers and its max_wait timer go at once), and min_bytes is capped by the request's
byte limit as Kafka caps it."""

from __future__ import annotations

import asyncio

from coordinator.data_plane.purgatory import FetchPurgatory
from coordinator.net.dispatch import Deferred
from tests.support.connection import connect, settle
from tests.support.data_plane import Plane, batch
from tests.support.wire_client import request_frame

FOREVER_MS = 2**31 - 1  # the largest max_wait the wire carries: 24.8 days


async def test_a_released_fetch_leaves_the_purgatory_and_cancels_its_timer():
    purgatory = FetchPurgatory()
    delayed = purgatory.park(["a", "b"], 100, 3600.0)
    timer = delayed.timer
    assert purgatory.waiting() == 1
    delayed.release()
    assert purgatory.waiting() == 0 and purgatory._watchers == {}
    assert delayed.future.cancelled() and timer is not None and timer.cancelled()
    purgatory.on_append("a", 1000)  # nothing watches any more; nothing breaks
    purgatory.wake("b")


async def test_a_fetch_whose_waiting_task_was_cancelled_first_still_leaves_the_watch_lists():
    """The connection cancels the handler's task, then releases: the task's cancel has already
    cancelled the future it awaits. The fetch used to stay in its watch lists for good (16 cycles
    of 500 x 1,000 partitions: 8 million entries that one DeleteTopics walked at once)."""
    purgatory = FetchPurgatory()
    delayed = purgatory.park(["a", "b"], 100, 3600.0)
    waiter = asyncio.ensure_future(delayed.future)
    await asyncio.sleep(0)
    waiter.cancel()
    assert delayed.future.cancelled()
    delayed.release()
    assert purgatory._watchers == {} and purgatory.waiting() == 0
    await asyncio.sleep(0)
    assert waiter.cancelled()


async def test_closing_a_connection_releases_its_parked_fetches(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", partitions=3)
        connection, transport = connect(plane)
        fetches = [plane.fetch_request("t", p, 0, max_wait=FOREVER_MS, min_bytes=1) for p in range(3)]
        connection.data_received(b"".join(request_frame(f, i) for i, f in enumerate(fetches)))
        held = [item for item in connection.pending if isinstance(item, Deferred)]
        assert len(held) == 3 and plane.data.purgatory.waiting() == 3
        await asyncio.sleep(0)  # each handler's task now awaits its fetch's future, as in a server
        connection.connection_lost(None)
        assert plane.data.purgatory.waiting() == 0
        assert plane.data.purgatory._watchers == {}  # not merely finished: gone from every watch list
        await settle(lambda: all(item.future.done() for item in held))
        assert all(item.future.cancelled() for item in held)
        assert transport.written == b""


async def test_an_open_connection_keeps_its_parked_fetch(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        connection, transport = connect(plane)
        connection.data_received(request_frame(plane.fetch_request("t", 0, 0, max_wait=FOREVER_MS), 7))
        assert plane.data.purgatory.waiting() == 1
        await plane.produce("t", 0, batch(b"wake"), acks=1)
        await settle(lambda: transport.written != b"")
        assert plane.data.purgatory.waiting() == 0
        connection.connection_lost(None)


async def test_min_bytes_is_capped_by_the_request_max_bytes(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        one = batch(b"x" * 100)
        # max_wait is the longest the wire carries: only the cap (Kafka: min(min_bytes, max_bytes) arrived) can
        # answer this fetch within the resolve's timeout; no wall-clock bound to meet on a loaded machine
        request = plane.fetch_request("t", 0, 0, max_wait=FOREVER_MS, min_bytes=2**31 - 1, max_bytes=len(one))
        pending = plane.send(request)
        assert isinstance(pending, Deferred)
        await plane.produce("t", 0, one, acks=1)
        response = await plane.resolve(request, pending, timeout=60)
        assert response.responses[0].partitions[0].records
        await asyncio.sleep(0)


async def test_many_woken_fetches_are_answered_a_slice_per_loop_turn():
    purgatory = FetchPurgatory(wake_slice=10)
    keys = ["p0", "p1", "p2", "p3"]
    parked = [purgatory.park(keys, 100, 3600.0) for _ in range(5)]
    parked[4].release()
    purgatory.wake("p2")  # e.g. the topic was deleted: every fetch wakes
    assert purgatory.waiting() == 0
    assert sum(d.future.done() for d in parked[:4]) == 3  # 3 x 4 partitions reach the slice of 10
    await asyncio.sleep(0)  # the next loop turn answers the rest
    assert all(d.future.done() for d in parked) and parked[4].future.cancelled()
    assert not purgatory._ready
