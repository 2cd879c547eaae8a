"""An OffsetFetch naming more than SLICE partitions is answered in slices that yield to the
loop, with the very bytes the generic path gives (every version, group errors, missing
groups and partitions, metadata, leader epochs, all-topics groups)."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from coordinator.handlers import offset_fetch, offset_fetch_slices
from coordinator.net.dispatch import Deferred, Dispatcher
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
    sliced, deferred = await answer_bytes(proc, request)
    assert deferred and sliced == generic


async def test_a_failing_read_answers_unknown_server_error_for_the_group(monkeypatch):
    proc = harness()
    request = request_for(5)
    monkeypatch.setattr(offset_fetch_slices, "SLICE", 4)
    monkeypatch.setattr(offset_fetch, "fetch", lambda *args: 1 / 0)
    out, deferred = await answer_bytes(proc, request)
    monkeypatch.setattr(offset_fetch_slices, "SLICE", 10**9)
    expected, _ = await answer_bytes(proc, request)  # the generic path's answer to the same failure
    assert deferred and out == expected
    assert decode(request, out).error_code == ErrorCode.unknown_server_error
