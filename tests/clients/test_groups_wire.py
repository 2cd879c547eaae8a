"""Classic groups against the running server process: kio wire clients and real admin clients."""

from __future__ import annotations

import datetime
import time

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from tests.support.wire_members import Member, join_and_sync_all

E = ErrorCode


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))






@pytest.fixture
def group_server(server_factory):
    return server_factory(overrides={"group.initial.rebalance.delay.ms": "1000",
                                     "group.min.session.timeout.ms": "500"})


def test_fifty_members_share_one_generation_then_rebalance_after_a_leave(group_server):
    members = [Member(group_server, "fifty", ["t"]) for _ in range(50)]
    try:
        join_and_sync_all(members)
        assert {m.generation for m in members} == {1}
        leader = next(m for m in members if m.join_response.members)
        assert len(leader.join_response.members) == 50
        assert {m.join_response.leader for m in members} == {leader.member_id}

        leaving = members.pop(7)
        assert leaving.leave().members[0].error_code is E.none
        leaving.close()
        assert all(m.heartbeat() is E.rebalance_in_progress for m in members)
        join_and_sync_all(members)
        assert {m.generation for m in members} == {2}
        assert all(m.heartbeat() is E.none for m in members)
        event = group_server.wait_for_event("rebalance", group="fifty", generation=2)
        assert event["cause"] == "member_left" and event["members"] == 49 and event["outcome"] == "stable"
    finally:
        for m in members:
            m.close()


def test_silent_member_is_removed_after_its_session_timeout(group_server):
    alive = Member(group_server, "sessions", ["t"], session=1000, rebalance=5000)
    silent = Member(group_server, "sessions", ["t"], session=1000, rebalance=5000)
    try:
        join_and_sync_all([alive, silent])
        started = time.monotonic()
        code = E.none
        while code is E.none and time.monotonic() - started < 10:
            time.sleep(0.2)
            code = alive.heartbeat()
        assert code is E.rebalance_in_progress
        assert 0.9 < time.monotonic() - started < 5
        group_server.wait_for_event("member session expired", group="sessions", member=silent.member_id)
        response = alive.join()
        assert response.generation_id == 2 and [m.member_id for m in response.members] == [alive.member_id]
        assert silent.heartbeat() is E.unknown_member_id
    finally:
        alive.close()
        silent.close()


# --- real admin clients against groups made by the kio members -----------------------------

@pytest.fixture
def stable_group(group_server):
    members = [Member(group_server, "admin-view", ["orders", "payments"], client_id=f"app-{i}") for i in range(3)]
    join_and_sync_all(members)
    yield group_server, members
    for m in members:
        m.close()


def test_kafka_python_admin_lists_and_describes(stable_group):
    from kafka.admin import KafkaAdminClient

    server, members = stable_group
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
    try:
        listed = admin.list_groups()
        assert {"group_id": "admin-view", "protocol_type": "consumer"}.items() <= \
            next(g for g in listed if g["group_id"] == "admin-view").items()
        described = admin.describe_groups(["admin-view"])["admin-view"]
        assert described["error"] is None
        assert (described["group_state"], described["protocol_type"], described["protocol_data"]) == \
            ("Stable", "consumer", "range")
        got = {m["member_id"]: m for m in described["members"]}
        assert set(got) == {m.member_id for m in members}
        for m in members:
            member = got[m.member_id]
            assert member["client_id"] == m.client_id and member["client_host"] == "/127.0.0.1"
            assert list(member["member_metadata"]["topics"]) == ["orders", "payments"]
            assert member["member_assignment"]["assigned_partitions"][0]["topic"] == "t"
    finally:
        admin.close()


def test_confluent_admin_lists_and_describes(stable_group):
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    server, members = stable_group
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    listed = admin.list_consumer_groups(request_timeout=10).result()
    assert not listed.errors
    [group] = [g for g in listed.valid if g.group_id == "admin-view"]
    assert group.state == ConsumerGroupState.STABLE and not group.is_simple_consumer_group
    stable_only = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}, request_timeout=10).result()
    assert "admin-view" not in [g.group_id for g in stable_only.valid]
    described = admin.describe_consumer_groups(["admin-view"], request_timeout=10)["admin-view"].result()
    assert described.state == ConsumerGroupState.STABLE and described.partition_assignor == "range"
    assert sorted(m.member_id for m in described.members) == sorted(m.member_id for m in members)
    partitions = sorted(tp.partition for m in described.members for tp in m.assignment.topic_partitions)
    assert partitions == [0, 1, 2]
    assert {m.client_id for m in described.members} == {"app-0", "app-1", "app-2"}
