"""An OffsetFetch naming more than SLICE partitions is answered in slices that yield to the
loop, with the very bytes the generic path gives (every version, group errors, missing
groups and partitions, metadata, leader epochs, all-topics groups)."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from coordinator.handlers import offset_fetch, offset_fetch_slices, sliced_encoding
from coordinator.net.dispatch import Deferred, Dispatcher
from protocol.apis import ApiKey
from tests.support.legacy_offsets import fetch_v0
from tests.support.offsets import OffsetsHarness, commit_request, decode, fetch_request
from tests.support.wire_client import request_frame

TOPICS = {"t": list(range(12)), "u": [3, 0, 9]}  # 15 partitions, some never committed


def harness() -> OffsetsHarness:
    proc = OffsetsHarness()
    for group in ("g", "h"):
        proc.commit(commit_request(8, group, {("t", p): 100 + p for p in range(0, 12, 2)}, metadata="meta",
                                   epoch=4))
        proc.commit(commit_request(8, group, {("u", 3): 7}, metadata=None))
    return proc


def request_for(version: int, group: str = "g"):
    if version == 0:
        return fetch_v0(group, TOPICS)
    if version >= 8:
        return fetch_request(version, group, None, groups={"g": TOPICS, "": TOPICS, "nobody": TOPICS, "h": None,
                                                           "g2": {"t": [1]}})
    return fetch_request(version, group, TOPICS)


async def answer_bytes(proc: OffsetsHarness, request) -> tuple[bytes, bool]:
    """The answer frame, and whether it was deferred (the sliced path)."""
    out = proc.dispatcher.dispatch(request_frame(request, 9)[4:], "127.0.0.1", 5555)
    if isinstance(out, Deferred):
        await asyncio.wait_for(out.future, 5)
        return Dispatcher.finish(out), True
    return out, False


# v8+ requests carry every group at once (request_for), so only "g" names them
@pytest.mark.parametrize("version, group",
                         [(v, g) for v in range(10) for g in (["g", "", "nobody"] if v < 8 else ["g"])])
async def test_sliced_answers_are_the_generic_bytes(monkeypatch, version, group):
    proc = harness()
    request = request_for(version, group)
    generic, deferred = await answer_bytes(proc, request)
    assert not deferred
    monkeypatch.setattr(offset_fetch_slices, "SLICE", 4)  # 15 partitions: sliced, several slices per topic
    monkeypatch.setattr(offset_fetch_slices, "BATCH", 4)
    sliced, deferred = await answer_bytes(proc, request)
    assert deferred and sliced == generic


async def test_a_failing_read_answers_unknown_server_error_for_the_group(monkeypatch):
    proc = harness()
    request = request_for(5)
    monkeypatch.setattr(offset_fetch_slices, "SLICE", 4)
    monkeypatch.setattr(offset_fetch_slices, "BATCH", 4)
    monkeypatch.setattr(offset_fetch, "fetch", lambda *args: 1 / 0)
    out, deferred = await answer_bytes(proc, request)
    monkeypatch.setattr(offset_fetch_slices, "SLICE", 10**9)
    # the generic path's answer to the same failure (not a fast lane's: the native one reads no `fetch`)
    expected = proc.dispatcher.dispatch_generic(request_frame(request, 9)[4:], ApiKey.OFFSET_FETCH, 5, 9,
                                                "127.0.0.1", 5555)
    assert deferred and out == expected
    assert decode(request, out).error_code == ErrorCode.unknown_server_error


class FakeClock:
    """sliced_encoding's clock, moved by hand or by `step` at every reading."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def loop_turns_during(awaitable) -> tuple[object, int]:
    """The awaitable's result and how many loop turns another task got while it ran."""
    turns = 0
    done = False

    async def count() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.ensure_future(count())
    await asyncio.sleep(0)  # the counter is running
    start = turns
    try:
        result = await awaitable
    finally:
        done = True
    await counter
    return result, turns - start


async def test_turns_yield_once_their_time_is_spent_and_not_before(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(sliced_encoding, "clock", clock)
    turns = sliced_encoding.Turns()

    async def batches(seconds_each: float, n: int) -> None:
        for _ in range(n):
            clock.now += seconds_each
            await turns.pause()

    _, others = await loop_turns_during(batches(sliced_encoding.TURN_SECONDS / 10, 9))
    assert others == 0  # 9 batches, nine tenths of a turn: the loop was never let go
    _, others = await loop_turns_during(batches(sliced_encoding.TURN_SECONDS / 10, 2))
    assert others == 1  # past the turn's time: let go once, and the next turn starts then
    _, others = await loop_turns_during(batches(sliced_encoding.TURN_SECONDS, 5))
    assert others == 5  # batches that each take a whole turn: let go after every one


async def test_a_sliced_answer_lets_other_tasks_run_between_batches_when_its_turn_is_spent(monkeypatch):
    proc = harness()
    request = fetch_request(8, "g", {"t": list(range(12)) * 10})  # 120 partitions: 30 batches of 4
    monkeypatch.setattr(offset_fetch_slices, "SLICE", 4)
    monkeypatch.setattr(offset_fetch_slices, "BATCH", 4)
    monkeypatch.setattr(sliced_encoding, "clock", FakeClock(step=sliced_encoding.TURN_SECONDS))
    (slow, deferred), others = await loop_turns_during(answer_bytes(proc, request))
    assert deferred and others >= 30  # every batch took a whole turn: the loop was let go after each
    monkeypatch.setattr(sliced_encoding, "clock", FakeClock())
    (fast, deferred), others = await loop_turns_during(answer_bytes(proc, request))
    assert deferred and fast == slow and others < 5  # no time passed: no batch let the loop go
