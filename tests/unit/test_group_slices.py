"""DescribeGroups naming more than SLICE groups and JoinGroup listing more than SLICE protocols
are worked through a slice per loop turn (issue 13: a 64 MB DescribeGroups of empty names held
the loop for minutes once decoded), with the answers of the one-go path."""

from __future__ import annotations

import dataclasses

from coordinator.handlers import sliced_encoding
from coordinator.net.dispatch import Deferred, Dispatcher
from protocol.apis import ApiKey
from tests.support.data_plane import ms, req
from tests.support.dispatch import InProcess, make_services
from tests.support.wire_client import request_frame, response_class_for

SMALL_SLICE = 3


async def answer(server: InProcess, request) -> tuple[bool, bytes]:
    """Whether the answer was deferred, and its frame."""
    out = server.dispatcher.dispatch(request_frame(request, 7)[4:], "127.0.0.1", 5555)
    if isinstance(out, Deferred):
        await out.future
        return True, Dispatcher.finish(out)
    return False, out


async def test_describe_groups_in_slices_answers_as_in_one_go(monkeypatch):
    server = InProcess(make_services(**{"group.initial.rebalance.delay.ms": "0"}))
    join = req(ApiKey.JOIN_GROUP, 3, group_id="real", session_timeout=ms(10_000), rebalance_timeout=ms(10_000),
               member_id="", protocol_type="consumer", protocols=[{"name": "range", "metadata": b"m"}])
    await answer(server, join)
    for version in (0, 5):
        extra = {"include_authorized_operations": True} if version >= 3 else {}
        request = req(ApiKey.DESCRIBE_GROUPS, version, groups=["", "a", "real", "b", "real", "c", "d"], **extra)
        deferred, whole = await answer(server, request)
        assert not deferred
        monkeypatch.setattr(sliced_encoding, "SLICE", SMALL_SLICE)
        monkeypatch.setattr(sliced_encoding, "BATCH", SMALL_SLICE)
        deferred, sliced = await answer(server, request)
        monkeypatch.undo()
        assert deferred
        assert sliced == whole
        assert b"CompletingRebalance" in whole  # the joined group, described with its member


def without_member_ids(frame: bytes, request) -> object:
    from kio.serial import entity_reader

    cls = response_class_for(request)
    response, _ = entity_reader(cls)(frame, 8 if cls.__header_schema__.__version__ == 0 else 9)
    members = tuple(dataclasses.replace(m, member_id="") for m in response.members)
    return dataclasses.replace(response, member_id="", leader="", members=members)


async def test_join_group_protocols_in_slices_are_deduplicated_as_in_one_go(monkeypatch):
    protocols = [{"name": n, "metadata": m} for n, m in
                 [("b", b"1"), ("a", b"2"), ("b", b"3"), ("c", b"4"), ("a", b"5"), ("", b"6"), ("", b"7")]]
    request = req(ApiKey.JOIN_GROUP, 3, group_id="g", session_timeout=ms(10_000), rebalance_timeout=ms(10_000),
                  member_id="", protocol_type="consumer", protocols=protocols)  # v3: no member id round trip
    delay = {"group.initial.rebalance.delay.ms": "0"}
    deferred, whole = await answer(InProcess(make_services(**delay)), request)
    monkeypatch.setattr(sliced_encoding, "SLICE", SMALL_SLICE)
    monkeypatch.setattr(sliced_encoding, "BATCH", SMALL_SLICE)
    server = InProcess(make_services(**delay))
    deferred, sliced = await answer(server, request)
    assert deferred
    assert without_member_ids(sliced, request) == without_member_ids(whole, request)
    group = server.services.groups.group("g")
    member = next(iter(group.members.values()))
    assert member.protocols == (("b", b"1"), ("a", b"2"), ("c", b"4"), ("", b"6"))


async def test_join_group_protocols_in_slices_answer_after_the_slices(monkeypatch):
    """v5 asks a new member to join again with its member id: in one go that answer is immediate."""
    request = req(ApiKey.JOIN_GROUP, 5, group_id="g", session_timeout=ms(10_000), rebalance_timeout=ms(10_000),
                  member_id="", group_instance_id=None, protocol_type="consumer",
                  protocols=[{"name": f"p{i}", "metadata": b""} for i in range(10)])
    deferred, whole = await answer(InProcess(), request)
    assert not deferred
    monkeypatch.setattr(sliced_encoding, "SLICE", SMALL_SLICE)
    monkeypatch.setattr(sliced_encoding, "BATCH", SMALL_SLICE)
    deferred, sliced = await answer(InProcess(), request)
    assert deferred
    assert without_member_ids(sliced, request) == without_member_ids(whole, request)
