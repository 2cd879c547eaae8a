"""Group operations return what to write; only the shard writes it (Kafka's CoordinatorResult).

Membership's join, sync and leave and the rebalance timers change the live group and return a
GroupResult (records + what waits for them); Shard.join/sync/leave and the shard's timers write it.
If a group module wrote by itself, a record would reach the log before the shard was handed it.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from structlog.testing import capture_logs

from coordinator.groups.context import GroupContext
from coordinator.groups.params import JoinParams, LeavingMember, SyncParams
from coordinator.groups.rebalance import Rebalancer
from coordinator.groups.result import GroupResult, combined
from coordinator.records.types import GroupMetadataRecord, GroupMetadataValue
from storage.errors import RecordTooLargeError, StorageError
from tests.support.groups import RANGE, Harness
from tests.support.import_graph import import_graph

E = ErrorCode


def join_params(member_id: str = "", version: int = 3) -> JoinParams:
    return JoinParams("g", member_id, None, 10000, 10000, "consumer", RANGE, None, "client", "/127.0.0.1", version)


def test_group_modules_have_no_way_to_write():
    assert not hasattr(GroupContext, "write")
    # stats: event counters for /metrics (groups/stats.py), plain ints that reach no log
    assert set(GroupContext.__slots__) == {"clock", "groups", "settings", "timers", "stats"}
    # of runtime/, groups/ knows only the timers' types: no PendingWrite, no log, no shard
    runtime = {target for module, targets in import_graph().items() if module.startswith("coordinator.groups.")
               for target in targets if target.startswith("coordinator.runtime.")}
    assert runtime == {"coordinator.runtime.timers"}


def test_join_and_sync_return_their_records_and_the_shard_writes_them():
    h = Harness()
    shard = h.shard()
    replies: list = []
    result = shard.membership.join(join_params(), replies.append)  # v3: joins at once, the initial delay runs

    assert isinstance(result, GroupResult)
    [record] = result.records  # the new group's empty GroupMetadata record
    assert record == GroupMetadataRecord("g", GroupMetadataValue("", 0, None, None, (), h.group().state_timestamp))
    assert h.log.all_records() == [] and h.log.pending == []  # the operation wrote nothing
    written = shard.write_result(result)
    assert written is not None and h.log.all_records() == [record]

    h.clock.advance(0)  # the initial delay ends: the join completes (nothing to write)
    [joined] = replies
    assert joined.error is E.none and joined.leader == joined.member_id
    synced: list = []
    params = SyncParams("g", joined.member_id, None, joined.generation_id, "consumer", "range",
                        ((joined.member_id, b"a"),), 5)
    result = shard.membership.sync(params, synced.append)
    assert isinstance(result, GroupResult) and len(h.log.all_records()) == 1  # still only the first
    assert synced == [] and h.group().state.value == "CompletingRebalance"
    shard.write_result(result)
    h.log.complete()
    assert h.group().state.value == "Stable"  # on_written ran: the Stable transition, the answer
    assert [r.error for r in synced] == [E.none] and synced[0].assignment == b"a"
    assert len(h.log.all_records()) == 2


def test_leave_returns_its_record_and_the_shard_hands_the_write_to_the_handler():
    h = Harness()
    [leader] = h.stable_group(1)
    shard = h.shard()
    before = len(h.log.all_records())
    answer, result = shard.membership.leave("g", [])
    assert answer.error is E.none and result is None
    answer, result = shard.membership.leave("g", [LeavingMember(leader)])
    assert result is not None and len(h.log.all_records()) == before
    assert h.group().state.value == "Empty"
    write = shard.write_result(result)
    assert write is not None and not write.done() and len(h.log.all_records()) == before + 1


def test_a_timer_fired_join_completion_is_written_through_the_shard_and_its_failure_is_logged():
    h = Harness()
    [leader] = h.stable_group(1)
    generation = h.group().generation_id
    before = len(h.log.all_records())

    h.clock.advance(10000)  # the only member's session expires: the join completes with no one
    group = h.group()
    assert group.state.value == "Empty" and group.generation_id == generation + 1
    [record] = h.log.all_records()[before:]  # written by the shard's timers, not by the operation
    assert record.group_id == "g" and record.value is not None
    assert record.value.generation == generation + 1 and record.value.members == ()
    assert len(h.log.pending) == 1

    with capture_logs() as logs:
        h.log.fail(StorageError("disk"))
    [warning] = [e for e in logs if e["event"] == "failed to store group metadata"]
    assert warning["what"] == "empty group" and warning["error"] == "not_coordinator"
    # a storage failure: debug, the storage layer logs the failing disk once (storage/disk_health.py)
    assert warning["log_level"] == "debug"
    with capture_logs() as logs:  # any other failure of the write is a warning
        Rebalancer._warn_on_failure("g", "empty group")(RecordTooLargeError("too large"))
    [warning] = [e for e in logs if e["event"] == "failed to store group metadata"]
    assert (warning["log_level"], warning["error"]) == ("warning", "unknown_server_error")
    assert leader not in group.members


def test_a_failed_assignment_write_answers_the_members_and_the_join_timer_then_writes_through_the_shard():
    h = Harness()
    shard = h.shard()
    a, a_join = h.new_member()
    b, _b_join = h.new_member()
    h.clock.advance(0)
    generation, leader = a_join[0].generation_id, a_join[0].leader
    follower = b if leader == a else a
    follower_sync = h.sync(follower, generation)
    leader_sync = h.sync(leader, generation, {a: b"x", b: b"y"})
    before = len(h.log.all_records())
    h.log.fail(StorageError("disk"))
    assert [r.error for r in follower_sync + leader_sync] == [E.not_coordinator, E.not_coordinator]
    assert h.group().state.value == "PreparingRebalance"
    assert len(h.log.all_records()) == before and shard.timers.deadline(("join", "g")) is not None

    h.clock.advance(10000)  # nobody rejoined: the join timer completes the join with the group Empty
    assert h.group().state.value == "Empty"
    [record] = h.log.all_records()[before:]
    assert record.value is not None and record.value.members == ()


def test_write_result_writes_what_on_written_returns():
    h = Harness()
    shard = h.shard()
    outcomes: list = []
    second = GroupMetadataRecord("g", None)

    def first_written(error: BaseException | None) -> GroupResult:
        outcomes.append(("first", error))
        return GroupResult([second], lambda error: outcomes.append(("second", error)))

    first = GroupMetadataRecord("g", GroupMetadataValue("", 0, None, None, (), 1))
    shard.write_result(GroupResult([first], first_written))
    assert h.log.all_records() == [first]
    h.log.complete()
    assert outcomes == [("first", None)] and h.log.all_records() == [first, second]
    h.log.complete()
    assert outcomes == [("first", None), ("second", None)]
    assert shard.write_result(None) is None


def test_combined_results_are_one_write_whose_callbacks_run_in_order():
    ran: list = []
    r1, r2, r3 = (GroupMetadataRecord(g, None) for g in ("a", "b", "c"))
    later = GroupResult([r3])
    one = GroupResult([r1], lambda error: ran.append(("one", error)))
    two = GroupResult([r2], lambda error: ran.append(("two", error)) or later)
    both = combined(one, two)
    assert both is not None and both.records == [r1, r2] and both.on_written is not None
    error = StorageError("disk")
    assert both.on_written(error) is later
    assert ran == [("one", error), ("two", error)]
    assert combined(None, two) is two and combined(one, None) is one and combined(None, None) is None
