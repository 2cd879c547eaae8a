"""The kio <-> domain mapping of the group APIs, per version, through the real dispatcher."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from protocol.apis import ApiKey
from tests.support.dispatch import InProcess, make_services
from tests.support.group_requests import call, join_request, schema

E = ErrorCode


@pytest.fixture
def proc() -> InProcess:
    return InProcess(make_services(**{"group.initial.rebalance.delay.ms": "0"}))


@pytest.mark.parametrize("version", range(10))
async def test_join_error_shapes_per_version(proc, version):
    response = await call(proc, join_request(version, session=10))
    assert response.error_code is E.invalid_session_timeout and response.generation_id == -1
    assert response.leader == "" and response.members == ()
    # JoinGroupResponse: "" before v7, null from v7
    assert response.protocol_name == ("" if version < 7 else None)


@pytest.mark.parametrize("version", [0, 3, 4, 7, 9])
async def test_join_completes_through_the_dispatcher(proc, version):
    response = await call(proc, join_request(version), client_id="cid")
    if version >= 4:
        assert response.error_code is E.member_id_required and response.member_id.startswith("cid-")
        response = await call(proc, join_request(version, response.member_id), client_id="cid")
    assert response.error_code is E.none and response.generation_id == 1
    assert response.protocol_name == "range" and response.leader == response.member_id
    assert [m.metadata for m in response.members] == [b"meta"]
    group = proc.services.groups.group("g")
    member = group.members[response.member_id]
    # v0 has no rebalance timeout: it is the session timeout
    assert (member.client_id, member.client_host, member.rebalance_timeout_ms) == ("cid", "/10.0.0.1", 10000)


async def test_heartbeat_responses_are_shared_per_version_and_error(proc):
    hb = schema("heartbeat", 4).HeartbeatRequest(group_id="g", generation_id=i32(1), member_id="m",
                                                 group_instance_id=None)
    first = await call(proc, hb)
    assert first.error_code is E.unknown_member_id
    handler = proc.dispatcher.handler(ApiKey.HEARTBEAT)

    class Ctx:
        api_version = 4

    assert handler(Ctx, hb) is handler(Ctx, hb)


@pytest.mark.parametrize("version", range(5))
async def test_heartbeat_versions(proc, version):
    mod = schema("heartbeat", version)
    kwargs = dict(group_id="", generation_id=i32(0), member_id="m")
    if version >= 3:
        kwargs["group_instance_id"] = None
    assert (await call(proc, mod.HeartbeatRequest(**kwargs))).error_code is E.invalid_group_id


@pytest.mark.parametrize("version", range(3))
async def test_leave_before_v3_lifts_the_member_error(proc, version):
    request = schema("leave_group", version).LeaveGroupRequest(group_id="nope", member_id="m")
    assert (await call(proc, request)).error_code is E.unknown_member_id


async def test_leave_v5_batch_and_sync_v5_protocol_checks(proc):
    joined = await call(proc, join_request(9))
    joined = await call(proc, join_request(9, joined.member_id))
    mid = joined.member_id
    sync_mod = schema("sync_group", 5)

    def sync(**kw):
        base = dict(group_id="g", generation_id=i32(1), member_id=mid, group_instance_id=None,
                    protocol_type="consumer", protocol_name="range",
                    assignments=(sync_mod.SyncGroupRequestAssignment(member_id=mid, assignment=b"A"),))
        return sync_mod.SyncGroupRequest(**{**base, **kw})

    assert (await call(proc, sync(protocol_name=None))).error_code is E.inconsistent_group_protocol
    assert (await call(proc, sync(protocol_type="other"))).error_code is E.inconsistent_group_protocol
    synced = await call(proc, sync())
    assert (synced.error_code, synced.assignment, synced.protocol_type) == (E.none, b"A", "consumer")
    leave_mod = schema("leave_group", 5)
    response = await call(proc, leave_mod.LeaveGroupRequest(group_id="g", members=(
        leave_mod.MemberIdentity(member_id=mid, group_instance_id=None, reason="done"),
        leave_mod.MemberIdentity(member_id="ghost", group_instance_id=None, reason=None))))
    assert response.error_code is E.none
    assert [(m.member_id, m.error_code) for m in response.members] == [(mid, E.none), ("ghost", E.unknown_member_id)]


@pytest.mark.parametrize("version", range(6))
async def test_describe_and_list_versions(proc, version):
    await call(proc, join_request(3))
    describe = schema("describe_groups", version)
    kwargs = {"groups": ("g", "unknown")}
    if version >= 3:
        kwargs["include_authorized_operations"] = True
    described = (await call(proc, describe.DescribeGroupsRequest(**kwargs))).groups
    assert [(g.group_id, g.group_state) for g in described] == [("g", "CompletingRebalance"), ("unknown", "Dead")]
    if version >= 3:
        assert described[0].authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)
    listing = schema("list_groups", version)
    kwargs = {}
    if version >= 4:
        kwargs["states_filter"] = ("completingrebalance",)
    if version >= 5:
        kwargs["types_filter"] = ("classic",)
    listed = (await call(proc, listing.ListGroupsRequest(**kwargs))).groups
    assert [(g.group_id, g.protocol_type) for g in listed] == [("g", "consumer")]


@pytest.mark.parametrize("version", range(3))
async def test_delete_groups_versions(proc, version):
    await call(proc, join_request(3, group_id="busy"))
    request = schema("delete_groups", version).DeleteGroupsRequest(groups_names=("busy", "missing", "missing"))
    response = await call(proc, request)
    assert [(r.group_id, r.error_code) for r in response.results] == [
        ("busy", E.non_empty_group), ("missing", E.group_id_not_found)]
