"""JoinGroup / SyncGroup / Heartbeat / LeaveGroup against Kafka's semantics, on a fake clock."""

from __future__ import annotations

import pytest
import structlog
from kio.schema.errors import ErrorCode

from coordinator.groups.classic_group import GroupState
from coordinator.groups.params import LeavingMember
from coordinator.records.types import GroupMetadataRecord, GroupMetadataValue, MemberMetadata
from storage.errors import StorageError
from tests.support.groups import RANGE, Harness

S = GroupState
E = ErrorCode


# --- JoinGroup validation ------------------------------------------------------------------

def test_empty_group_id_is_invalid():
    h = Harness()
    assert h.join(group_id="")[0].error is E.invalid_group_id


@pytest.mark.parametrize("member_id", ["", "some-member"])
def test_empty_group_instance_id_is_an_invalid_request_and_makes_no_group(member_id):
    h = Harness()
    assert h.join(member_id, instance="")[0].error is E.invalid_request
    assert h.coordinator.group("g") is None


@pytest.mark.parametrize("session", [5999, 1800001, -1, 0])
def test_session_timeout_outside_bounds(session):
    h = Harness()
    assert h.join(session=session)[0].error is E.invalid_session_timeout
    assert h.coordinator.group("g") is None


@pytest.mark.parametrize("session", [6000, 1800000])
def test_session_timeout_bounds_are_inclusive(session):
    h = Harness()
    assert h.join(session=session)[0].error is E.member_id_required


def test_known_member_id_for_unknown_group():
    h = Harness()
    assert h.join("someone")[0] .error is E.unknown_member_id


@pytest.mark.parametrize("kwargs", [{"protocols": ()}, {"ptype": ""}])
def test_new_group_needs_a_protocol_type_and_protocols(kwargs):
    h = Harness()
    assert h.join(**kwargs)[0].error is E.inconsistent_group_protocol


def test_protocol_type_and_protocols_must_match_the_group():
    h = Harness()
    h.stable_group(1)
    assert h.join(ptype="connect")[0].error is E.inconsistent_group_protocol
    assert h.join(protocols=(("roundrobin", b""),))[0].error is E.inconsistent_group_protocol
    assert h.join(protocols=(("roundrobin", b""), ("range", b"")))[0].error is E.member_id_required


def test_v4_plus_unknown_member_gets_member_id_required_with_client_id_prefix():
    h = Harness()
    r = h.join(client_id="my-client")[0]
    assert r.error is E.member_id_required and r.member_id.startswith("my-client-")
    assert h.group().is_pending_member(r.member_id) and h.group().state is S.EMPTY


def test_v3_unknown_member_joins_at_once():
    h = Harness()
    replies = h.join(version=3)
    assert replies == []  # waiting in the join phase
    h.clock.advance(0)
    assert replies[0].error is E.none and replies[0].generation_id == 1


def test_group_max_size_reached():
    h = Harness(max_size=2)
    h.stable_group(2)
    assert h.join(version=3)[0].error is E.group_max_size_reached
    assert h.join(version=3)[0].member_id == ""


def test_max_size_in_preparing_rebalance_counts_awaiting_members():
    h = Harness(max_size=1, initial_rebalance_delay_ms=100)
    first = h.join(version=3)
    assert first == []
    assert h.join(version=3)[0].error is E.group_max_size_reached


# --- join phase -------------------------------------------------------------------------------

def test_members_joining_together_share_one_generation_and_only_leader_gets_members():
    h = Harness(initial_rebalance_delay_ms=3000)
    joined = [h.new_member(protocols=(("range", f"m{i}".encode()),)) for i in range(5)]
    assert all(replies == [] for _, replies in joined)
    h.clock.advance(3000)  # members joined during the delay: it is extended once more
    assert all(replies == [] for _, replies in joined)
    h.clock.advance(3000)
    results = [replies[0] for _, replies in joined]
    assert {r.generation_id for r in results} == {1}
    leader = results[0].member_id
    assert all(r.leader == leader and r.protocol_name == "range" and r.protocol_type == "consumer" for r in results)
    assert [len(r.members) for r in results] == [5, 0, 0, 0, 0]
    assert {m[2] for m in results[0].members} == {f"m{i}".encode() for i in range(5)}
    assert h.group().state is S.COMPLETING_REBALANCE


def test_initial_delay_is_extended_by_each_new_joiner_up_to_the_rebalance_timeout():
    h = Harness(initial_rebalance_delay_ms=3000)
    _, first = h.new_member(rebalance=10000)
    h.clock.advance(2999)
    h.new_member(rebalance=10000)
    h.clock.advance(1)  # 3000: a member was added during the delay: wait one more delay
    assert first == []
    h.clock.advance(2999)
    assert first == []
    h.clock.advance(1)  # 6000: nobody new: complete
    assert first[0].error is E.none


def test_initial_delay_extension_is_capped_by_rebalance_timeout():
    h = Harness(initial_rebalance_delay_ms=3000)
    _, first = h.new_member(rebalance=4000)  # remaining after the first delay: 1000
    for _ in range(3):
        h.clock.advance(1000)
        h.new_member(rebalance=4000)
    assert first == []
    h.clock.advance(1000)  # 4000 in all
    assert first and first[0].error is E.none


def test_rebalance_timeout_removes_members_that_did_not_rejoin():
    h = Harness()
    a, b = h.stable_group(2, rebalance=20000)
    replies = h.join(a, rebalance=20000)  # the leader rejoins: rebalance, b must rejoin
    assert h.group().state is S.PREPARING_REBALANCE and replies == []
    for _ in range(3):
        assert h.heartbeat(b, 1) is E.rebalance_in_progress  # b stays alive but does not rejoin
        h.clock.advance(5000)
    h.heartbeat(b, 1)
    h.clock.advance(4999)
    assert replies == []
    h.clock.advance(1)
    assert replies[0].error is E.none and replies[0].generation_id == 2
    assert list(h.group().members) == [a]


def test_leader_that_does_not_rejoin_is_replaced():
    h = Harness()
    a, b = h.stable_group(2)
    replies = h.join(b, protocols=(("range", b"changed"),))  # subscription change by the follower
    h.clock.advance(10000)
    assert replies[0].leader == b and h.group().leader_id == b and a not in h.group().members


def test_join_completes_as_soon_as_every_member_rejoined():
    h = Harness()
    a, b = h.stable_group(2)
    ra = h.join(a)
    assert ra == []
    rb = h.join(b)
    assert ra[0].generation_id == rb[0].generation_id == 2


def test_follower_rejoining_stable_group_unchanged_gets_current_generation_without_rebalance():
    h = Harness()
    a, b = h.stable_group(2)
    r = h.join(b)[0]
    assert r.error is E.none and r.generation_id == 1 and r.members == () and r.leader == a
    assert h.group().state is S.STABLE


def test_join_in_completing_rebalance_with_same_metadata_returns_current_generation():
    """A join arriving while the group waits for the leader's SyncGroup (completion ran)."""
    h = Harness()
    a, _ = h.new_member()
    b, _ = h.new_member()
    h.clock.advance(0)
    assert h.group().state is S.COMPLETING_REBALANCE
    again = h.join(a)[0]
    assert again.generation_id == 1 and len(again.members) == 2 and again.leader == a


def test_new_member_during_completing_rebalance_sends_waiting_syncs_back_to_rejoin():
    h = Harness()
    a, _ = h.new_member()
    b, _ = h.new_member()
    h.clock.advance(0)
    waiting = h.sync(b, 1)
    assert waiting == []
    h.new_member()  # third member: rebalance
    assert waiting[0].error is E.rebalance_in_progress and h.group().state is S.PREPARING_REBALANCE


def test_existing_member_rejoining_empty_group_is_unknown():
    h = Harness()
    a, _ = h.new_member()
    # pending member rejoined (is a member) in PreparingRebalance; make the group Empty again:
    h.leave(a)
    assert h.group().state is S.PREPARING_REBALANCE  # the initial rebalance ends on its timer
    h.clock.advance(0)
    assert h.group().state is S.EMPTY
    assert h.join(a)[0].error is E.unknown_member_id


# --- pending members -------------------------------------------------------------------------------

def test_pending_member_expires_after_its_session_timeout():
    h = Harness()
    pending = h.join(session=6000)[0].member_id
    h.clock.advance(5999)
    assert h.group().is_pending_member(pending)
    h.clock.advance(1)
    assert not h.group().is_pending_member(pending)
    assert h.join(pending)[0].error is E.unknown_member_id


def test_pending_member_blocks_join_completion_until_it_expires():
    h = Harness()
    a, b = h.stable_group(2)
    ra, rb = h.join(a), h.join(b)  # rebalance in progress, both rejoined ...
    assert ra and rb  # ... so it completed at once
    pending = h.join(session=6000)[0].member_id  # unknown member: pending, group Stable? no: CompletingRebalance
    assert h.group().is_pending_member(pending)


# --- SyncGroup ---------------------------------------------------------------------------------------

def test_sync_errors():
    h = Harness()
    a, b = h.stable_group(2)
    assert h.sync(a, 1, group_id="")[0].error is E.invalid_group_id
    assert h.sync(a, 1, group_id="other")[0].error is E.unknown_member_id
    assert h.sync("nobody", 1)[0].error is E.unknown_member_id
    assert h.sync(a, 7)[0].error is E.illegal_generation
    assert h.sync(a, 1, pname="roundrobin")[0].error is E.inconsistent_group_protocol
    assert h.sync(a, 1, ptype="connect")[0].error is E.inconsistent_group_protocol
    assert h.sync(a, 1, pname=None)[0].error is E.inconsistent_group_protocol  # v5 requires both
    assert h.sync(a, 1, pname=None, version=4)[0].error is E.none  # before v5 null matches anything
    assert h.sync(a, 1, instance="i9")[0].error is E.unknown_member_id
    h.join(a)  # leader rejoins: PreparingRebalance
    assert h.sync(b, 1)[0].error is E.rebalance_in_progress


def test_sync_empty_group_is_unknown_member():
    h = Harness()
    h.join()  # creates the group, Empty with a pending member
    assert h.sync("x", 0)[0].error is E.unknown_member_id


def test_assignment_is_delivered_only_after_the_group_record_is_written():
    h = Harness()
    (a, _ra), (b, _rb) = h.new_member(), h.new_member()
    h.clock.advance(0)
    h.log.records.clear()
    follower = h.sync(b, 1)
    leader = h.sync(a, 1, {a: b"A", b: b"B", "stranger": b"X"})
    assert follower == [] and leader == [] and h.group().state is S.COMPLETING_REBALANCE
    [record] = h.log.all_records()
    group = h.group()
    assert record == GroupMetadataRecord("g", GroupMetadataValue(
        protocol_type="consumer", generation=1, protocol="range", leader=a,
        current_state_timestamp=group.state_timestamp,
        members=(MemberMetadata(a, "client", "/127.0.0.1", 10000, b"range-meta", b"A", None, 10000),
                 MemberMetadata(b, "client", "/127.0.0.1", 10000, b"range-meta", b"B", None, 10000))))
    h.log.complete()
    assert group.state is S.STABLE
    assert (leader[0].error, leader[0].assignment, leader[0].protocol_name) == (E.none, b"A", "range")
    assert (follower[0].error, follower[0].assignment, follower[0].protocol_type) == (E.none, b"B", "consumer")
    assert h.sync(b, 1)[0].assignment == b"B"  # Stable: answered at once


def test_missing_assignment_is_empty():
    h = Harness()
    (a, _), (b, _) = h.new_member(), h.new_member()
    h.clock.advance(0)
    waiting = h.sync(b, 1)
    h.sync(a, 1, {a: b"A"})
    h.log.complete()
    assert waiting[0].error is E.none and waiting[0].assignment == b""


def test_failed_write_resets_assignment_and_answers_the_mapped_error():
    h = Harness()
    (a, _), (b, _) = h.new_member(), h.new_member()
    h.clock.advance(0)
    follower = h.sync(b, 1)
    leader = h.sync(a, 1, {a: b"A", b: b"B"})
    h.log.fail(StorageError("disk on fire"))
    # KAFKA_STORAGE_ERROR -> NOT_COORDINATOR (appendGroupMetadataErrorToResponseError)
    assert leader[0].error is E.not_coordinator and follower[0].error is E.not_coordinator
    assert leader[0].protocol_name is None and leader[0].assignment == b""
    group = h.group()
    assert group.state is S.PREPARING_REBALANCE and all(m.assignment == b"" for m in group.members.values())


def test_write_completing_after_a_new_rebalance_started_is_ignored():
    h = Harness()
    (a, _), (b, _) = h.new_member(), h.new_member()
    h.clock.advance(0)
    leader = h.sync(a, 1, {a: b"A", b: b"B"})
    h.join(b, protocols=(("range", b"new"),))  # b changes its subscription before the write lands
    assert leader[0].error is E.rebalance_in_progress
    h.log.complete()
    assert h.group().state is S.PREPARING_REBALANCE


def test_sync_expiry_removes_members_that_never_synced():
    h = Harness()
    (a, _), (b, _) = h.new_member(session=40000, rebalance=30000), h.new_member(session=40000, rebalance=30000)
    h.clock.advance(0)
    h.sync(a, 1, {a: b"A", b: b"B"})
    h.log.complete()
    assert h.group().state is S.STABLE
    h.heartbeat(b, 1)  # heartbeats do not count as a sync
    h.clock.advance(29999)
    h.heartbeat(a, 1)
    assert b in h.group().members
    h.clock.advance(1)
    assert b not in h.group().members and h.group().state is S.PREPARING_REBALANCE
    assert h.heartbeat(a, 1) is E.rebalance_in_progress
    assert h.group().open_rebalance.cause == "sync_timeout"


# --- Heartbeat ---------------------------------------------------------------------------------------

def test_heartbeat_errors_per_state():
    h = Harness()
    assert h.heartbeat("m", 0, group_id="") is E.invalid_group_id
    assert h.heartbeat("m", 0, group_id="missing") is E.unknown_member_id
    a, b = h.stable_group(2)
    assert h.heartbeat(a, 1) is E.none
    assert h.heartbeat(a, 0) is E.illegal_generation
    assert h.heartbeat("nobody", 1) is E.unknown_member_id
    h.join(a)
    assert h.heartbeat(b, 1) is E.rebalance_in_progress  # PreparingRebalance
    h.join(b)
    assert h.group().state is S.COMPLETING_REBALANCE
    assert h.heartbeat(b, 2) is E.none  # Kafka: a normal heartbeat in CompletingRebalance
    assert h.heartbeat(b, 1) is E.illegal_generation
    group = h.group()
    group.transition_to(S.DEAD, 0)
    assert h.heartbeat(b, 2) is E.coordinator_not_available


def test_session_expiry_removes_member_and_rebalances():
    h = Harness()
    with structlog.testing.capture_logs() as logs:
        a, b = h.stable_group(2, session=6000)
        for _ in range(5):
            h.clock.advance(1000)
            assert h.heartbeat(a, 1) is E.none
        assert b in h.group().members
        h.clock.advance(1000)  # b's deadline: 6000 after its assignment
        assert b not in h.group().members
        assert h.heartbeat(a, 1) is E.rebalance_in_progress
        assert h.group().state is S.PREPARING_REBALANCE and h.group().open_rebalance.cause == "session_timeout"
        replies = h.join(a, session=6000)
        assert replies[0].generation_id == 2 and len(replies[0].members) == 1
        h.sync(a, 2, {a: b"A"})
        h.log.complete()
    rebalances = [e for e in logs if e["event"] == "rebalance"]
    assert [(e["cause"], e["generation"], e["members"], e["outcome"]) for e in rebalances] == [
        ("member_joined", 1, 2, "stable"), ("session_timeout", 2, 1, "stable")]
    assert [r.cause for r in h.group().rebalances] == ["member_joined", "session_timeout"]
    # who came and went, as the history shows it; the node's counters by cause (for /metrics)
    assert [(r.joined, r.left) for r in h.group().rebalances] == [((a, b), ()), ((), (b,))]
    first, second = h.group().rebalances
    assert second.started_wall_ms == h.clock.wall_ms()  # when b's session ran out (the clock stood still since)
    assert second.started_wall_ms - first.started_wall_ms >= 6000
    assert h.coordinator.stats.rebalances == {"member_joined": 1, "session_timeout": 1}


def test_heartbeat_just_before_expiry_keeps_the_member():
    h = Harness()
    a, = h.stable_group(1, session=6000)
    h.clock.advance(5999)
    assert h.heartbeat(a, 1) is E.none
    h.clock.advance(1)  # the original deadline: the timer fires, sees the moved deadline, re-arms
    assert a in h.group().members
    h.clock.advance(5998)
    assert a in h.group().members
    h.clock.advance(1)
    assert a not in h.group().members


def test_heartbeat_arriving_after_the_session_expired_is_unknown():
    h = Harness()
    a, = h.stable_group(1, session=6000)
    h.clock.advance(6000)
    assert h.heartbeat(a, 1) is E.unknown_member_id
    assert h.group().state is S.EMPTY


def test_heartbeats_cost_no_timer_work():
    h = Harness()
    ids = h.stable_group(3, session=6000)
    timers = h.coordinator.shard_for("g").timers
    pending = h.clock.pending()
    for _ in range(1000):
        for member_id in ids:
            h.heartbeat(member_id, 1)
    assert h.clock.pending() == pending and len(timers) == 3  # one session timer per member


def test_members_waiting_in_a_rebalance_do_not_expire():
    h = Harness()
    a, b = h.stable_group(2, session=6000, rebalance=60000)
    ra = h.join(a, session=6000, rebalance=60000)  # a waits for b to rejoin
    for _ in range(10):
        h.clock.advance(1000)
        h.heartbeat(b, 1)
    assert a in h.group().members and ra == []


# --- static members --------------------------------------------------------------------------------

def static_group(h: Harness, instances=("i1", "i2"), version=9):
    replies = [h.join(instance=i, version=version) for i in instances]
    h.clock.advance(0)
    ids = [r[0].member_id for r in replies]
    assert ids[0].startswith("i1-")  # static member ids start with the instance id
    for member_id, instance in list(zip(ids, instances))[1:]:
        h.sync(member_id, 1, instance=instance)
    h.sync(ids[0], 1, dict(zip(ids, [b"A", b"B"])), instance=instances[0])
    h.log.complete()
    return ids


def test_static_member_rejoin_replaces_old_member_without_rebalance():
    h = Harness()
    leader, follower = static_group(h)
    h.log.records.clear()
    replies = h.join(instance="i2")
    assert replies == []  # waits for the write of the new member id
    [record] = h.log.all_records()
    new_id = record.value.members[1].member_id
    assert new_id != follower and record.value.members[1].assignment == b"B"
    h.log.complete()
    r = replies[0]
    assert (r.error, r.member_id, r.generation_id, r.leader, r.skip_assignment) == (E.none, new_id, 1, leader, False)
    group = h.group()
    assert group.state is S.STABLE and group.generation_id == 1
    assert h.heartbeat(follower, 1, instance="i2") is E.fenced_instance_id
    assert h.sync(follower, 1, instance="i2")[0].error is E.fenced_instance_id
    assert h.join(follower, instance="i2")[0].error is E.fenced_instance_id
    assert h.heartbeat(new_id, 1, instance="i2") is E.none
    assert h.sync(new_id, 1, instance="i2")[0].assignment == b"B"


def test_static_leader_rejoin_v9_is_told_to_skip_assignment():
    h = Harness()
    leader, _ = static_group(h)
    replies = h.join(instance="i1", version=9)
    h.log.complete()
    r = replies[0]
    assert r.leader == r.member_id != leader and r.skip_assignment and len(r.members) == 2


def test_static_leader_rejoin_before_v9_gets_the_old_leader_id():
    h = Harness()
    leader, _ = static_group(h, version=5)
    replies = h.join(instance="i1", version=5)
    h.log.complete()
    r = replies[0]
    assert r.leader == leader != r.member_id and not r.skip_assignment and r.members == ()
    assert h.group().leader_id == r.member_id


def test_static_replacement_write_failure_reverts_to_old_member():
    h = Harness()
    _, follower = static_group(h)
    replies = h.join(instance="i2")
    h.log.fail(StorageError("no"))
    assert replies[0].error is E.not_coordinator and replies[0].member_id == ""
    assert h.group().static_member_id("i2") == follower and h.heartbeat(follower, 1, instance="i2") is E.none


def test_static_rejoin_with_other_protocols_rebalances():
    h = Harness()
    static_group(h)
    h.join(instance="i2", protocols=(("sticky", b""), ("range", b"")))
    assert h.group().state is S.STABLE  # the vote still picks range: no rebalance
    h2 = Harness()
    static_group(h2, instances=("i1",))
    h2.join(instance="i1", protocols=(("sticky", b""), ("range", b"")))  # its vote changes
    group = h2.group()  # it is the only member, so the new generation completes at once
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2 and group.protocol_name == "sticky"
    assert group.open_rebalance.cause == "static_member_protocol_change"


def test_static_members_are_kept_when_they_do_not_rejoin():
    h = Harness()
    a, b = static_group(h)
    h.heartbeat(b, 1, instance="i2")
    h.join(a, instance="i1", session=30000, rebalance=10000)
    h.clock.advance(5000)
    assert h.heartbeat(b, 1, instance="i2") is E.rebalance_in_progress
    h.clock.advance(5000)
    assert set(h.group().members) == {a, b} and h.group().generation_id == 2


# --- LeaveGroup ----------------------------------------------------------------------------------

def test_leave_batch_reports_per_member_errors():
    h = Harness()
    a, b, c = h.stable_group(3)
    h.join(instance="s1")  # a static member joining makes a rebalance
    result, _ = h.leave(LeavingMember(a), LeavingMember("ghost"), LeavingMember("", "no-such-instance"),
                        LeavingMember(b, "s1"), LeavingMember(c, reason="shutting down"))
    assert result.error is E.none
    assert [code for _m, _i, code in result.members] == [
        E.none, E.unknown_member_id, E.unknown_member_id, E.fenced_instance_id, E.none]
    assert set(h.group().members) == {b, h.group().static_member_id("s1")}


def test_leave_by_instance_id_with_unknown_member_id_is_administrative_removal():
    h = Harness()
    a, _b = static_group(h)
    result, _ = h.leave(LeavingMember("", "i1"))
    assert result.members == (("", "i1", E.none),) and a not in h.group().members
    assert h.group().state is S.PREPARING_REBALANCE


def test_leave_unknown_group_and_dead_group():
    h = Harness()
    result, write = h.leave("m", group_id="nope")
    assert result.error is E.none and result.members == (("m", None, E.unknown_member_id),) and write is None
    assert h.leave("m", group_id="")[0].error is E.invalid_group_id
    h.stable_group(1)
    h.group().transition_to(S.DEAD, 0)
    assert h.leave("m")[0].error is E.coordinator_not_available


def test_last_member_leaving_writes_the_empty_group_record():
    h = Harness()
    a, = h.stable_group(1)
    h.log.records.clear()
    result, write = h.leave(a)
    assert write is not None and not write.done()
    group = h.group()
    assert group.state is S.EMPTY and group.generation_id == 2
    assert h.log.all_records() == [GroupMetadataRecord("g", GroupMetadataValue(
        "consumer", 2, None, None, (), group.state_timestamp))]
    h.log.complete()
    assert write.done() and write.exception() is None


def test_leaving_member_waiting_in_join_gets_unknown_member_id():
    h = Harness()
    a, b = h.stable_group(2)
    waiting = h.join(a)
    h.leave(a)
    assert waiting[0].error is E.unknown_member_id
    assert h.group().leader_id == b


def test_pending_member_leaving():
    h = Harness()
    pending = h.join()[0].member_id
    result, _ = h.leave(pending)
    assert result.members == ((pending, None, E.none),) and not h.group().is_pending_member(pending)


def test_new_group_is_committed_with_an_empty_record():
    h = Harness()
    h.join()
    [record] = h.log.all_records()
    assert record.group_id == "g" and record.value.generation == 0 and record.value.members == ()
    assert record.value.protocol_type == "" and record.value.protocol is None and record.value.leader is None
    assert RANGE  # the default protocol list used everywhere


def test_write_of_an_old_generation_landing_during_the_next_sync_phase_is_ignored():
    h = Harness()
    (a, _), (b, _) = h.new_member(), h.new_member()
    h.clock.advance(0)
    h.sync(a, 1, {a: b"A", b: b"B"})  # generation 1's write stays pending
    h.join(b, protocols=(("range", b"new"),))
    h.join(a)  # everyone rejoined: generation 2 is CompletingRebalance
    group = h.group()
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2
    waiting = h.sync(b, 2)
    h.log.complete()  # generation 1's record lands now
    assert group.state is S.COMPLETING_REBALANCE and waiting == []
    assert all(m.assignment == b"" for m in group.members.values())
