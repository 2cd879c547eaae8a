"""An OffsetCommit whose records cannot fit one batch of the offsets log (message.max.bytes) is
answered INVALID_COMMIT_OFFSET_SIZE for every partition, as Kafka's CoordinatorRuntime does,
without being decoded or written; a group error found first wins; smaller commits are unchanged."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from coordinator.handlers.commit_size import SCAN_FROM
from coordinator.net.dispatch import Deferred, Dispatcher
from tests.support.legacy_offsets import commit_v0, commit_v1
from tests.support.offsets import OffsetsHarness, codes, commit_request, decode
from tests.support.wire_client import request_frame

E = ErrorCode
PARTITIONS = 20_000  # a frame of ~300-400 KB, past SCAN_FROM; records of ~0.9 MB
TOPICS = ("orders", "payments")


def big_commit(version: int, **kwargs) -> object:
    offsets = {(TOPICS[i % 2], i // 2): i for i in range(PARTITIONS)}
    if version == 0:
        request = commit_v0("g", offsets)
    elif version == 1:
        request = commit_v1("g", offsets, **kwargs)
    else:
        request = commit_request(version, "g", offsets, **kwargs)
    assert len(request_frame(request, 3)) > SCAN_FROM
    return request


async def answer(proc: OffsetsHarness, request: object) -> object:
    out = proc.send(request)
    if isinstance(out, Deferred):
        if isinstance(out.future, asyncio.Future):
            await out.future
        else:
            proc.log.complete()
        return decode(request, Dispatcher.finish(out))
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 5, 6, 7, 8, 9])
async def test_a_commit_past_the_batch_limit_is_refused_whole_and_writes_nothing(version):
    proc = OffsetsHarness(offsets_max_batch_bytes=100_000)
    request = big_commit(version)
    response = await answer(proc, request)
    got = codes(response)
    assert len(got) == PARTITIONS and set(got.values()) == {E.invalid_commit_offset_size}
    assert [t.name for t in response.topics] == list(TOPICS)  # the request's topics, in order
    assert proc.log.all_records() == [] and not proc.coordinator.shard_for("g").offsets.by_group


@pytest.mark.parametrize("version", [1, 2, 8])
async def test_a_commit_under_the_limit_is_written_as_before(version):
    proc = OffsetsHarness()  # message.max.bytes' default, 1048588
    got = codes(await answer(proc, big_commit(version)))
    assert len(got) == PARTITIONS and set(got.values()) == {E.none}
    assert len(proc.log.all_records()) == PARTITIONS


async def test_a_group_error_wins_over_the_size():
    proc = OffsetsHarness(offsets_max_batch_bytes=100_000)
    small = commit_request(8, "g", {("orders", 0): 1}, generation=3, member="ghost")
    (expected,) = set(codes(await answer(proc, small)).values())
    assert expected not in (E.none, E.invalid_commit_offset_size)
    got = codes(await answer(proc, big_commit(8, generation=3, member="ghost")))
    assert len(got) == PARTITIONS and set(got.values()) == {expected}
