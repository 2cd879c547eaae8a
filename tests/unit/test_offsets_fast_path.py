"""The OffsetCommit fast path answers and writes exactly as the generic path, or declines.

Two identical harnesses (fake clock, MemoryLog) receive the same frames: one through
the fast path (`Dispatcher.fast_path`), one through `Dispatcher.dispatch_generic`. Their
answers (bytes), the records written and the offsets stored must be equal, for every
version the fast path takes (v2-v9), for the answers a commit can get (NONE, member and
generation errors, too-large metadata, a loading partition, an empty group id), and for
mangled frames, where the fast path must give the generic answer or decline (None).
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.errors import ErrorCode

from coordinator.completion import Completion
from coordinator.net.dispatch import CloseConnection, Deferred, Dispatcher
from coordinator.runtime.shard import ShardState
from protocol.apis import ApiKey
from protocol.header import encode_request_header
from tests.support.examples import examples
from tests.support.offsets import OffsetsHarness, codes, commit_request, decode
from tests.support.wire_client import request_frame

E = ErrorCode
COMMIT = int(ApiKey.OFFSET_COMMIT)
FAST_VERSIONS = range(2, 10)
HOST, PORT = "10.0.0.1", 5555


def frame_of(request: Any, correlation_id: int = 7) -> bytes:
    return request_frame(request, correlation_id)[4:]


def fast(proc: OffsetsHarness, frame: bytes) -> bytes | Deferred | None:
    _key, version, correlation_id = struct.unpack_from(">hhi", frame)
    return proc.dispatcher.fast_path(ApiKey.OFFSET_COMMIT)(frame, version, correlation_id)


def generic(proc: OffsetsHarness, frame: bytes) -> bytes | Deferred | str:
    key, version, correlation_id = struct.unpack_from(">hhi", frame)
    try:
        return proc.dispatcher.dispatch_generic(frame, key, version, correlation_id, HOST, PORT)
    except CloseConnection:
        return "closed"


def settled(proc: OffsetsHarness, out: Any) -> Any:
    """The answer's bytes once the harness's log completes the write (at once if not deferred)."""
    if isinstance(out, Deferred):
        assert not out.future.done(), "a commit answered before its write completed"
        proc.log.complete()
        return Dispatcher.finish(out)
    return out


def state(proc: OffsetsHarness) -> tuple:
    records = proc.log.all_records()
    offsets = {g: {t: list(p) if isinstance(p, list) else dict(p) for t, p in topics.items()}
               for shard in proc.coordinator.owned_shards() for g, topics in shard.offsets.by_group.items()}
    return records, offsets


def same(frame: bytes, prepare=lambda proc: None) -> bytes:
    """Both paths on fresh, equally prepared harnesses: equal answers, records and offsets."""
    a, b = OffsetsHarness(), OffsetsHarness()
    prepare(a)
    prepare(b)
    got = fast(a, frame)
    assert got is not None, "the fast path declined a plain frame"
    got = settled(a, got)
    expected = settled(b, generic(b, frame))
    assert got == expected
    assert state(a) == state(b)
    return got


@pytest.mark.parametrize("version", FAST_VERSIONS)
def test_a_commit_is_deferred_until_durable_and_answered_as_the_generic_path(version):
    request = commit_request(version, "g", {("t", 0): 5, ("t", 1): 6, ("u", 3): 7}, metadata="m")
    proc = OffsetsHarness()
    out = fast(proc, frame_of(request))
    assert isinstance(out, Deferred) and isinstance(out.future, Completion)
    answer = decode(request, settled(proc, out))
    assert set(codes(answer).values()) == {E.none}
    assert proc.coordinator.shard_for("g").offsets.get("g", "u", 3).offset == 7
    same(frame_of(request))


@pytest.mark.parametrize("version", FAST_VERSIONS)
def test_every_commit_error_is_answered_as_the_generic_path(version):
    no_such_group = commit_request(version, "g", {("t", 0): 1}, generation=3, member="nobody")
    expected = E.group_id_not_found if version >= 9 else E.illegal_generation
    assert set(codes(decode(no_such_group, same(frame_of(no_such_group)))).values()) == {expected}

    def with_member(proc: OffsetsHarness) -> None:
        proc.new_member()
        proc.clock.advance(1)  # initial delay 0: the join completes

    unknown_member = commit_request(version, "g", {("t", 0): 1}, generation=1, member="nobody")
    assert set(codes(decode(unknown_member, same(frame_of(unknown_member), with_member))).values()) == {
        E.unknown_member_id}

    too_large = commit_request(version, "g", {("t", 0): 1, ("t", 1): 2}, metadata="x" * 5000)
    assert set(codes(decode(too_large, same(frame_of(too_large)))).values()) == {E.offset_metadata_too_large}

    no_group = commit_request(version, "", {("t", 0): 1})
    assert set(codes(decode(no_group, same(frame_of(no_group)))).values()) == {E.invalid_group_id}

    def loading(proc: OffsetsHarness) -> None:
        proc.coordinator.shard_for("g").set_state(ShardState.LOADING)

    plain = commit_request(version, "g", {("t", 0): 1})
    answer = decode(plain, same(frame_of(plain), loading))
    assert set(codes(answer).values()) == {E.coordinator_load_in_progress}


def test_a_failed_write_is_answered_as_the_generic_path():
    request = commit_request(8, "g", {("t", 0): 5})
    answers = []
    for path in (fast, generic):
        proc = OffsetsHarness()
        out = path(proc, frame_of(request))
        assert isinstance(out, Deferred)
        proc.log.fail(OSError("disk gone"))
        answers.append(Dispatcher.finish(out))
        assert proc.coordinator.shard_for("g").offsets.get("g", "t", 0) is None  # reverted
    assert answers[0] == answers[1]
    assert set(codes(decode(request, answers[0])).values()) == {E.unknown_server_error}


@pytest.mark.parametrize("version", [0, 1])
def test_legacy_versions_go_down_the_generic_path(version):
    frame = encode_request_header(COMMIT, version, 7, "client", False) + b"\x00\x01g\x00\x00\x00\x00"
    assert fast(OffsetsHarness(), frame) is None


def test_an_uncommon_header_goes_down_the_generic_path():
    request = commit_request(8, "g", {("t", 0): 5})
    body = frame_of(request)
    plain_header = encode_request_header(COMMIT, 8, 7, "test-client", True)
    assert body.startswith(plain_header)
    tagged = encode_request_header(COMMIT, 8, 7, "test-client", False) + b"\x01\x00\x00" + body[len(plain_header):]
    assert fast(OffsetsHarness(), tagged) is None  # header tagged fields: the generic parser judges them
    proc = OffsetsHarness()
    assert set(codes(decode(request, settled(proc, generic(proc, tagged)))).values()) == {E.none}


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from(list(FAST_VERSIONS)), cut=st.integers(min_value=8, max_value=200),
       flip=st.integers(min_value=0, max_value=255), at=st.integers(min_value=8, max_value=200))
def test_mangled_frames_get_the_generic_answer_or_are_declined(version, cut, flip, at):
    frame = bytearray(frame_of(commit_request(version, "group", {("topic", 0): 5, ("topic", 1): 6}, metadata="md")))
    if at < len(frame):
        frame[at] ^= flip
    mangled = bytes(frame[:cut])
    a, b = OffsetsHarness(), OffsetsHarness()
    got = fast(a, mangled)
    if got is None:
        return  # declined: the generic path decides alone
    assert settled(a, got) == settled(b, generic(b, mangled))
    assert state(a) == state(b)
