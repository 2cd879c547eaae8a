"""Issue 13 defect 6 (second half): a member id is built from a client id of up to 32,767
bytes (the request header's int16 string); it must still fit the int16 strings it is persisted
and answered in, or every SyncGroup of the group fails."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.groups.classic_group import MAX_SHORT_STRING_BYTES, MEMBER_ID_PREFIX_MAX_BYTES, ClassicGroup
from tests.support.dispatch import InProcess, make_services
from tests.support.group_requests import call, join_request, schema
from tests.support.groups import Harness
from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

E = ErrorCode


@pytest.mark.parametrize("prefix", ["c" * 32767, "é" * 16383, "€" * 10922 + "x", "ok"])
def test_generated_member_ids_fit_a_short_string(prefix):
    for member_id in (ClassicGroup.generate_member_id(prefix, None), ClassicGroup.generate_member_id("c", prefix)):
        assert len(member_id.encode()) <= MAX_SHORT_STRING_BYTES
        head = member_id[:-37]  # cut at a character boundary, no more than one character short
        assert prefix.startswith(head)
        assert len(head.encode()) > min(len(prefix.encode()), MEMBER_ID_PREFIX_MAX_BYTES) - 4
    assert ClassicGroup.generate_member_id("ok", None).startswith("ok-")


@pytest.mark.parametrize("version", [4, 5, 9])
async def test_a_32767_byte_client_id_joins_and_syncs(version):
    proc = InProcess(make_services(**{"group.initial.rebalance.delay.ms": "0"}))
    client_id = "c" * 32767
    first = await call(proc, join_request(version), client_id=client_id)
    assert first.error_code is E.member_id_required
    joined = await call(proc, join_request(version, first.member_id), client_id=client_id)
    assert joined.error_code is E.none and joined.leader == first.member_id
    mod = schema("sync_group", min(version, 5))
    kwargs = dict(group_id="g", generation_id=joined.generation_id, member_id=joined.member_id,
                  group_instance_id=None,
                  assignments=(mod.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"a"),))
    if version >= 5:
        kwargs.update(protocol_type="consumer", protocol_name="range")
    synced = await call(proc, mod.SyncGroupRequest(**kwargs), client_id=client_id)
    assert (synced.error_code, synced.assignment) == (E.none, b"a")


def test_a_group_instance_id_that_cannot_be_persisted_is_refused():
    h = Harness()
    (reply,) = h.join(instance="i" * (MAX_SHORT_STRING_BYTES + 1))
    assert reply.error is E.invalid_request
    (reply,) = h.join(protocols=(("r" * 40000, b""),))
    assert reply.error is E.invalid_request
    joining = h.join(instance="i" * MAX_SHORT_STRING_BYTES)  # the longest that fits: a static member
    assert joining == [] and len(h.group().members) == 1


@pytest.mark.integration
def test_the_real_server_persists_the_group_of_a_32767_byte_client_id(tmp_path):
    """Flexible JoinGroup v9 can carry the long id; the group's record must still be written."""
    server = start_server(str(tmp_path), {"group.initial.rebalance.delay.ms": "0"})
    client_id = "c" * 32767
    try:
        with WireClient(server.host, server.port) as client:
            first = client.call(join_request(9), client_id=client_id)
            joined = client.call(join_request(9, first.member_id), client_id=client_id)
            assert joined.error_code is E.none
            mod = schema("sync_group", 5)
            synced = client.call(mod.SyncGroupRequest(
                group_id="g", generation_id=joined.generation_id, member_id=joined.member_id,
                group_instance_id=None, protocol_type="consumer", protocol_name="range",
                assignments=(mod.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"a"),)),
                client_id=client_id)
            assert (synced.error_code, synced.assignment) == (E.none, b"a")
    finally:
        server.stop()
