"""A request frame over SLICED_FROM is decoded without stopping the loop (issue 13): the generic
dispatch answers it as a Deferred, decoded by protocol/sliced_decode.py, with the answer the
small-frame path gives; the fast paths leave such frames to it."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.net import dispatch
from coordinator.net.dispatch import CloseConnection, Deferred, Dispatcher
from primitives.uvarint import encode_uvarint as uvarint
from protocol.apis import API_TABLE, ApiKey
from protocol.codec import decode_common
from protocol.sliced_decode import CHUNK, SLICED_FROM
from tests.support.data_plane import ms, req
from tests.support.dispatch import InProcess
from tests.support.wire_client import request_frame

MANY = SLICED_FROM // 3 + 1000  # empty JoinGroup v9 protocols: three bytes each


def describe_groups_frame(groups: list[str]) -> bytes:
    return request_frame(req(ApiKey.DESCRIBE_GROUPS, 5, groups=groups, include_authorized_operations=False), 7)[4:]


def join_frame(protocols: int) -> bytes:
    return request_frame(req(ApiKey.JOIN_GROUP, 9, group_id="g", session_timeout=ms(10_000),
                             rebalance_timeout=ms(10_000), member_id="", group_instance_id=None,
                             protocol_type="consumer", protocols=[{"name": "", "metadata": b""}] * protocols,
                             reason=None), 7)[4:]


def heartbeat_frame(group: str) -> bytes:
    return request_frame(req(ApiKey.HEARTBEAT, 4, group_id=group, generation_id=1, member_id="m",
                             group_instance_id=None), 7)[4:]


async def answer_of(out: bytes | Deferred | None) -> bytes | None:
    if isinstance(out, Deferred):
        await out.future  # an asyncio future or a Completion: both are awaitable
        return Dispatcher.finish(out)
    return out


async def both_ways(frame: bytes, monkeypatch) -> tuple[bytes | Deferred | None, bytes | None, bytes | None]:
    """The dispatcher's result for `frame`, its answer, and the answer of the small-frame path."""
    server = InProcess()
    out = server.dispatcher.dispatch(frame, "127.0.0.1", 5555)
    sliced = await answer_of(out)
    monkeypatch.setattr(dispatch, "SLICED_FROM", len(frame))
    whole = await answer_of(InProcess().dispatcher.dispatch(frame, "127.0.0.1", 5555))
    return out, sliced, whole


async def test_a_large_describe_groups_is_a_deferred_with_the_small_path_answer(monkeypatch):
    frame = describe_groups_frame([f"group-{i:012d}" for i in range(SLICED_FROM // 19 + 100)])
    assert len(frame) > SLICED_FROM
    out, sliced, whole = await both_ways(frame, monkeypatch)
    assert isinstance(out, Deferred)
    assert isinstance(whole, bytes) and sliced == whole


async def test_other_tasks_run_while_a_large_frame_decodes():
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    running = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    before = ticks
    out = InProcess().dispatcher.dispatch(join_frame(MANY), "127.0.0.1", 5555)
    assert ticks == before  # nothing decoded yet, nothing waited for
    assert isinstance(out, Deferred)
    await out.future
    running.cancel()
    assert ticks - before >= MANY // CHUNK  # once per yield of the decoder at least


async def test_a_large_malformed_frame_closes_the_connection():
    frame = describe_groups_frame([])[:-3] + uvarint(4 * SLICED_FROM) + b"\x01" * SLICED_FROM + b"\x00\x00"
    assert len(frame) > SLICED_FROM
    out = InProcess().dispatcher.dispatch(frame, "127.0.0.1", 5555)
    assert isinstance(out, Deferred)
    with pytest.raises(CloseConnection, match="body does not parse: CountError"):
        await answer_of(out)


async def test_the_heartbeat_fast_path_leaves_a_large_frame_to_the_generic_path(monkeypatch):
    frame = heartbeat_frame("g" * SLICED_FROM)
    spec = API_TABLE[ApiKey.HEARTBEAT]
    assert decode_common(spec, 4, frame, True) is None
    assert decode_common(spec, 4, heartbeat_frame("g"), True) is not None
    out, sliced, whole = await both_ways(frame, monkeypatch)
    assert isinstance(out, Deferred)
    assert sliced == whole


async def test_the_commit_fast_path_leaves_a_large_frame_to_the_generic_path(monkeypatch):
    topics = [{"name": f"t{i}", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                "committed_leader_epoch": -1, "committed_metadata": ""}]}
              for i in range(SLICED_FROM // 20)]
    frame = request_frame(req(ApiKey.OFFSET_COMMIT, 9, group_id="g", generation_id_or_member_epoch=-1,
                              member_id="", group_instance_id=None, topics=topics), 7)[4:]
    assert len(frame) > SLICED_FROM
    out, sliced, whole = await both_ways(frame, monkeypatch)
    assert isinstance(out, Deferred)
    assert sliced == whole
