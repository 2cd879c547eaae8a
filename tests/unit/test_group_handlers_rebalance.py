"""JoinGroup / SyncGroup answers that arrive after the handler returned (delayed operations), per version.

The handlers build these responses directly (not through protocol/build.py) and hand the
dispatcher a Completion (coordinator/completion.py): these tests pin each version's shape and
the failure path.
"""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from coordinator.completion import Completion
from coordinator.net.dispatch import Deferred, Dispatcher
from tests.support.dispatch import InProcess, make_services
from tests.support.group_requests import call, join_request, schema
from tests.support.wire_client import request_frame

E = ErrorCode


@pytest.fixture
def proc() -> InProcess:
    return InProcess(make_services(**{"group.initial.rebalance.delay.ms": "0"}))


def dispatch(proc: InProcess, request) -> Deferred | bytes:
    return proc.dispatcher.dispatch(request_frame(request, 9, "tester")[4:], "10.0.0.1", 5555)


async def answer(deferred: Deferred, cls: type):
    """The decoded response of a delayed answer."""
    await deferred.future
    out = Dispatcher.finish(deferred)
    assert out is not None
    offset = 8 if cls.__header_schema__.__version__ == 0 else 9
    return entity_reader(cls)(out, offset)[0]


async def two_members(proc: InProcess, version: int) -> tuple:
    """Two members join one generation together; returns both JoinGroup responses."""
    first_id = second_id = ""
    if version >= 4:
        first_id = (await call(proc, join_request(version))).member_id
        second_id = (await call(proc, join_request(version))).member_id
    extra = {"instance": None} if version >= 5 else {}
    if version < 4:
        # v0-3 members join at once with an unknown id: their JoinGroups wait together
        pending = [dispatch(proc, join_request(version, **extra)) for _ in range(2)]
    else:
        pending = [dispatch(proc, join_request(version, mid, **extra)) for mid in (first_id, second_id)]
    assert all(isinstance(p, Deferred) for p in pending)
    # the answers are Completions (no Task per waiting member)
    assert not any(isinstance(p.future, asyncio.Task) for p in pending)
    cls = schema("join_group", version, "response").JoinGroupResponse
    return tuple([await answer(deferred, cls) for deferred in pending])


@pytest.mark.parametrize("version", range(10))
async def test_delayed_join_answers_leader_gets_every_member_followers_none(proc, version):
    a, b = await two_members(proc, version)
    assert a.error_code is E.none and b.error_code is E.none
    assert a.generation_id == b.generation_id == 1 and a.leader == b.leader
    leader, follower = (a, b) if a.member_id == a.leader else (b, a)
    assert sorted(m.member_id for m in leader.members) == sorted([a.member_id, b.member_id])
    assert all(m.metadata == b"meta" for m in leader.members)
    if version >= 5:
        assert all(m.group_instance_id is None for m in leader.members)
    assert follower.members == ()
    assert leader.protocol_name == "range"
    if version >= 7:
        assert leader.protocol_type == "consumer"
    if version >= 9:
        assert leader.skip_assignment is False


@pytest.mark.parametrize("version", range(6))
async def test_delayed_sync_answer_per_version(proc, version):
    a, b = await two_members(proc, 5)
    leader, follower = (a, b) if a.member_id == a.leader else (b, a)
    mod = schema("sync_group", version)
    kwargs = {"group_instance_id": None} if version >= 3 else {}
    if version >= 5:
        kwargs.update(protocol_type="consumer", protocol_name="range")

    def sync(member_id: str, assignments=()):
        return mod.SyncGroupRequest(group_id="g", generation_id=a.generation_id, member_id=member_id,
                                    assignments=assignments, **kwargs)

    waiting = dispatch(proc, sync(follower.member_id))
    assert isinstance(waiting, Deferred) and not isinstance(waiting.future, asyncio.Task)
    assignments = tuple(mod.SyncGroupRequestAssignment(member_id=m, assignment=m.encode())
                        for m in (leader.member_id, follower.member_id))
    mine = await call(proc, sync(leader.member_id, assignments))
    assert mine.error_code is E.none and mine.assignment == leader.member_id.encode()
    theirs = await answer(waiting, schema("sync_group", version, "response").SyncGroupResponse)
    assert theirs.error_code is E.none and theirs.assignment == follower.member_id.encode()
    if version >= 5:
        assert (theirs.protocol_type, theirs.protocol_name) == ("consumer", "range")


async def test_reply_answered_before_the_handler_returned_is_converted_at_once():
    reply = Completion()
    reply.set_result("early")
    reply.set_result("ignored")  # only the first answer counts
    assert reply.now_or_then(str.upper) == "EARLY"


async def test_reply_conversion_failure_fails_the_future():
    reply = Completion()
    future = reply.now_or_then(lambda result: 1 // 0)
    reply.set_result("late")
    with pytest.raises(ZeroDivisionError):
        await future


async def test_reply_after_the_future_was_cancelled_is_dropped():
    reply = Completion()
    future = reply.now_or_then(str.upper)
    future.cancel()
    reply.set_result("late")  # a closed connection cancelled it: no InvalidStateError
    assert future.cancelled()
