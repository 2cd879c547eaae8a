"""OffsetCommit answers from the cache of encoded bodies equal the ones built from kio objects."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Deferred, Dispatcher
from protocol.codec import encode_response
from tests.support.offsets import OffsetsHarness, codes, commit_request, decode, mixed_commit, schema

E = ErrorCode
pytestmark = pytest.mark.asyncio


def expected_frame(version: int, header_version: int, answer: dict[str, list[tuple[int, ErrorCode]]]) -> bytes:
    m = schema("offset_commit", version, "response")
    topics = tuple(m.OffsetCommitResponseTopic(name=name, partitions=tuple(
        m.OffsetCommitResponsePartition(partition_index=i32(i), error_code=c) for i, c in parts))
        for name, parts in answer.items())
    kwargs = {"throttle_time": NO_THROTTLE} if version >= 3 else {}
    return encode_response(3, header_version, m.OffsetCommitResponse(topics=topics, **kwargs))


def committed_frame(h: OffsetsHarness, request) -> bytes:
    out = h.send(request)
    assert isinstance(out, Deferred)
    h.log.complete()
    return Dispatcher.finish(out)


@pytest.mark.parametrize("version", [2, 3, 7, 8, 9])
async def test_cached_ok_answers_are_the_encoded_kio_answers(version):
    h = OffsetsHarness()
    request = commit_request(version, "g", {("t", 2): 5, ("t", 0): 6, ("u", 1): 7})
    header_version = 1 if version >= 8 else 0
    want = expected_frame(version, header_version, {"t": [(2, E.none), (0, E.none)], "u": [(1, E.none)]})
    first = committed_frame(h, request)
    again = committed_frame(h, commit_request(version, "g", {("t", 2): 8, ("t", 0): 9, ("u", 1): 10}))
    assert first == again == want
    # another shape (different partitions, topics or version) is another body
    other = committed_frame(h, commit_request(version, "g", {("t", 2): 5, ("t", 1): 6, ("u", 1): 7}))
    assert codes(decode(request, other)) == {("t", 2): E.none, ("t", 1): E.none, ("u", 1): E.none}


async def test_answers_with_an_error_are_built_not_cached():
    h = OffsetsHarness(offset_metadata_max_bytes=4)
    mixed = mixed_commit(7, {0: "ok", 1: "too long"})
    refused_one = {("t", 0): E.none, ("t", 1): E.offset_metadata_too_large}
    assert codes(decode(mixed, committed_frame(h, mixed))) == refused_one
    ok = mixed_commit(7, {0: "ok", 1: "ok"})
    assert codes(decode(ok, committed_frame(h, ok))) == {("t", 0): E.none, ("t", 1): E.none}
    refused_one = {("t", 0): E.none, ("t", 1): E.offset_metadata_too_large}
    assert codes(decode(mixed, committed_frame(h, mixed))) == refused_one
