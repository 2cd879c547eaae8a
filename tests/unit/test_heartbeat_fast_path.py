"""The Heartbeat fast path answers byte for byte as the generic path, or hands the frame to it.

Every test compares the fast path, `HeartbeatHandler.fast` (hand-read frame, cached response frame), with
`Dispatcher.dispatch_generic` (kio decode, handler, encoder) on the same frame and the
same group state: for every version and every error the shared heartbeat decision
gives, for generated field values, and for mangled frames, where the fast path must
either give the generic answer or decline (None) so that the generic path decides.
"""

from __future__ import annotations

import datetime
import importlib
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader
from kio.static.primitive import i32, i32Timedelta

from coordinator.net.dispatch import CloseConnection, Deferred, Dispatcher
from coordinator.runtime.shard import ShardState
from coordinator.runtime.timers import FakeScheduler
from protocol.apis import ApiKey
from protocol.header import HeaderError, encode_request_header, parse_request_header, plain_body_offset
from tests.support.dispatch import InProcess, make_services
from tests.support.examples import examples
from tests.support.wire_client import request_frame

E = ErrorCode
VERSIONS = range(5)
HOST, PORT = "10.0.0.1", 5555


def heartbeat(version: int, group_id: str, generation: int, member_id: str, instance: str | None = None) -> Any:
    module = importlib.import_module(f"kio.schema.heartbeat.v{version}.request")
    kwargs: dict[str, Any] = dict(group_id=group_id, generation_id=i32(generation), member_id=member_id)
    if version >= 3:
        kwargs["group_instance_id"] = instance
    return module.HeartbeatRequest(**kwargs)


def fast(proc: InProcess, frame: bytes) -> bytes | None:
    _key, version, correlation_id = struct.unpack_from(">hhi", frame)
    return proc.dispatcher.fast_path(ApiKey.HEARTBEAT)(frame, version, correlation_id)


def generic(proc: InProcess, frame: bytes) -> bytes | str:
    """The generic path's answer, or "closed" when it closes the connection."""
    key, version, correlation_id = struct.unpack_from(">hhi", frame)
    try:
        out = proc.dispatcher.dispatch_generic(frame, key, version, correlation_id, HOST, PORT)
    except CloseConnection:
        return "closed"
    assert isinstance(out, bytes)
    return out


def error_of(answer: bytes, version: int) -> ErrorCode:
    module = importlib.import_module(f"kio.schema.heartbeat.v{version}.response")
    offset = 8 if version < 4 else 9  # size, correlation id, [header tagged fields]
    response, used = entity_reader(module.HeartbeatResponse)(answer, offset)
    assert offset + used == len(answer)
    return response.error_code


def same_answer(proc: InProcess, frame: bytes) -> bytes:
    got, expected = fast(proc, frame), generic(proc, frame)
    assert got is not None, "the fast path declined a plain frame"
    assert got == expected
    return got


def join_frame(group_id: str, member_id: str = "", instance: str | None = None) -> bytes:
    module = importlib.import_module("kio.schema.join_group.v5.request")
    protocol = module.JoinGroupRequestProtocol(name="range", metadata=b"meta")
    request = module.JoinGroupRequest(
        group_id=group_id, session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)), member_id=member_id,
        group_instance_id=instance, protocol_type="consumer", protocols=(protocol,))
    return request_frame(request, 1, "c")[4:]


async def join(proc: InProcess, group_id: str, member_id: str = "", instance: str | None = None) -> Any:
    out = proc.dispatcher.dispatch(join_frame(group_id, member_id, instance), HOST, PORT)
    if isinstance(out, Deferred):
        await out.future
        out = Dispatcher.finish(out)
    assert isinstance(out, bytes)
    response_module = importlib.import_module("kio.schema.join_group.v5.response")
    return entity_reader(response_module.JoinGroupResponse)(out, 8)[0]


def offline() -> InProcess:
    """For a test without an event loop: the groups' timers on a fake clock. (On the loop's scheduler a group's
    first request there fails with unknown_server_error on both paths, which compares nothing.)"""
    return InProcess(make_services(scheduler=FakeScheduler()))


@pytest.fixture
def proc() -> InProcess:
    return InProcess(make_services(**{"group.initial.rebalance.delay.ms": "0"}))


async def joined_member(proc: InProcess, group_id: str, instance: str | None = None) -> str:
    first = await join(proc, group_id, instance=instance)
    if first.error_code is E.member_id_required:
        first = await join(proc, group_id, first.member_id, instance)
    assert first.error_code is E.none and first.generation_id == 1
    return first.member_id


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_error_of_the_heartbeat_decision_gives_the_generic_bytes(proc, version, monkeypatch):
    member = await joined_member(proc, "g")
    cases = [
        (heartbeat(version, "g", 1, member), E.none),
        (heartbeat(version, "g", 2, member), E.illegal_generation),
        (heartbeat(version, "g", 1, "stranger"), E.unknown_member_id),
        (heartbeat(version, "nobody", 1, member), E.unknown_member_id),
        (heartbeat(version, "", 1, member), E.invalid_group_id),
    ]
    if version >= 3:
        await joined_member(proc, "s", instance="i1")
        cases.append((heartbeat(version, "s", 1, "not-the-owner", "i1"), E.fenced_instance_id))
    for request, code in cases:
        for client_id in ("consumer-1", None, ""):
            answer = same_answer(proc, request_frame(request, 77, client_id)[4:])
            assert error_of(answer, version) is code, request

    # a second member's join makes the group rebalance: the first hears REBALANCE_IN_PROGRESS
    newcomer = await join(proc, "g")
    assert newcomer.error_code is E.member_id_required
    waiting = proc.dispatcher.dispatch(join_frame("g", newcomer.member_id), HOST, PORT)
    assert isinstance(waiting, Deferred)  # answered once the first member rejoins (never, here)
    answer = same_answer(proc, request_frame(heartbeat(version, "g", 1, member), 4)[4:])
    assert error_of(answer, version) is E.rebalance_in_progress
    shard = proc.services.groups.shard_for("g")

    # shard states: loading answers NONE blindly, unloaded NOT_COORDINATOR
    frame = request_frame(heartbeat(version, "g", 9, "x"), 5)[4:]
    for state, code in ((ShardState.LOADING, E.none), (ShardState.UNLOADED, E.not_coordinator)):
        shard.set_state(state)
        assert error_of(same_answer(proc, frame), version) is code
    shard.set_state(ShardState.ACTIVE)

    def broken(*_args: Any) -> ErrorCode:
        raise RuntimeError("boom")

    monkeypatch.setattr(shard, "heartbeat", broken)
    assert error_of(same_answer(proc, frame), version) is E.unknown_server_error


@pytest.mark.parametrize("version", VERSIONS)
async def test_dispatch_takes_the_fast_path_which_moves_the_session_deadline(proc, version, monkeypatch):
    member = await joined_member(proc, "g")
    frame = request_frame(heartbeat(version, "g", 1, member), 11)[4:]
    expected = generic(proc, frame)
    state = proc.services.groups.group("g").members[member]
    state.session_deadline_ms = 0.0

    def refuse(*_args: Any) -> None:
        raise AssertionError("a plain heartbeat went down the generic path")

    monkeypatch.setattr(proc.dispatcher, "dispatch_generic", refuse)
    assert proc.dispatcher.dispatch(frame, HOST, PORT) == expected
    assert state.session_deadline_ms > 0.0  # the shared decision ran: the deadline moved


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=140)
client_ids = st.one_of(st.none(), names)


@given(client_id=client_ids, flexible=st.booleans(), tagged=st.booleans(), body=st.binary(max_size=20))
def test_plain_body_offset_agrees_with_the_header_parser(client_id, flexible, tagged, body):
    header = encode_request_header(12, 4 if flexible else 3, 9, client_id, flexible)
    if flexible and tagged:
        header = header[:-1] + b"\x01\x00\x01x"  # one tagged field (tag 0, 1 byte)
    frame = header + body
    offset = plain_body_offset(frame, flexible)
    assert offset == -1 or offset == parse_request_header(frame, flexible).body_offset
    if (client_id is None or client_id.isascii()) and not (flexible and tagged):
        assert offset == len(header)


@given(frame=st.binary(max_size=40), flexible=st.booleans())
def test_plain_body_offset_of_any_bytes_is_declined_or_the_parsers(frame, flexible):
    offset = plain_body_offset(frame, flexible)
    if offset >= 0:
        assert offset == parse_request_header(frame, flexible).body_offset
    else:
        try:
            parse_request_header(frame, flexible)
        except HeaderError:
            pass


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(version=st.sampled_from(VERSIONS), group_id=names, member_id=names,
       instance=st.one_of(st.none(), names), generation=st.integers(-2**31, 2**31 - 1), client_id=client_ids)
def test_generated_heartbeats_get_the_generic_answer(version, group_id, member_id, instance, generation, client_id):
    proc = offline()
    frame = request_frame(heartbeat(version, group_id, generation, member_id, instance), 5, client_id)[4:]
    got, expected = fast(proc, frame), generic(proc, frame)
    assert got is None or got == expected
    assert isinstance(expected, bytes) and error_of(expected, version) is not E.unknown_server_error


def mangle(data: st.DataObject, frame: bytes) -> bytes:
    edit = data.draw(st.sampled_from(["truncate", "flip", "append", "splice"]))
    if edit == "truncate":
        return frame[:data.draw(st.integers(0, len(frame)))]
    if edit == "append":
        return frame + data.draw(st.binary(min_size=1, max_size=8))
    at = data.draw(st.integers(8, len(frame) - 1))  # keep api key / version / correlation id
    if edit == "flip":
        return frame[:at] + bytes([data.draw(st.integers(0, 255))]) + frame[at + 1:]
    return frame[:at] + data.draw(st.binary(max_size=8)) + frame[at + data.draw(st.integers(0, 4)):]


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(version=st.sampled_from(VERSIONS), instance=st.sampled_from([None, "i"]), data=st.data())
def test_mangled_frames_get_the_generic_answer_or_go_to_it(version, instance, data):
    proc = offline()
    frame = mangle(data, request_frame(heartbeat(version, "group", 3, "member", instance), 5, "cid")[4:])
    if len(frame) < 8:
        with pytest.raises(CloseConnection):
            proc.dispatcher.dispatch(frame, HOST, PORT)
        return
    got = fast(proc, frame)
    expected = generic(proc, frame)
    assert got is None or got == expected
    # and the dispatcher as a whole behaves as the generic path
    try:
        assert proc.dispatcher.dispatch(frame, HOST, PORT) == expected
    except CloseConnection:
        assert expected == "closed"


@pytest.mark.parametrize("version", [-1, 5])
def test_unknown_versions_go_to_the_generic_path(proc, version):
    frame = bytearray(request_frame(heartbeat(4, "g", 1, "m"), 5)[4:])
    struct.pack_into(">h", frame, 2, version)
    assert fast(proc, bytes(frame)) is None
    with pytest.raises(CloseConnection, match="unsupported"):
        proc.dispatcher.dispatch(bytes(frame), HOST, PORT)
