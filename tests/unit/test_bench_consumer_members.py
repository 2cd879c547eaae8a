"""The simulated KIP-848 members of bench_consumer_groups: the requests they send (what Kafka's validation and
the Java client's HeartbeatState make of them), their reconciliation, and GroupView's verdicts."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.consumer_group_heartbeat.v1.response import Assignment, ConsumerGroupHeartbeatResponse, TopicPartitions
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta

from bench.lib.consumer_members import (
    ConsumerMember,
    GroupView,
    HeartbeatFailed,
    SteadyCheck,
    new_member_id,
    partitions_of,
    steady_frames,
)
from protocol.codec import encode_response

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def answer(epoch: int, owned: dict[uuid.UUID, list[int]] | None = None, member_id: str = "m",
           error: ErrorCode = ErrorCode.none) -> ConsumerGroupHeartbeatResponse:
    assignment = None if owned is None else Assignment(topic_partitions=tuple(
        TopicPartitions(topic_id=t, partitions=tuple(i32(p) for p in ps)) for t, ps in owned.items()))
    return ConsumerGroupHeartbeatResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=error, member_id=member_id,
        member_epoch=i32(epoch), heartbeat_interval=i32Timedelta.parse(datetime.timedelta(milliseconds=1000)),
        assignment=assignment)


def test_member_ids_are_what_the_java_client_generates() -> None:
    ids = {new_member_id() for _ in range(50)}
    assert len(ids) == 50 and all(len(i) == 22 and "=" not in i for i in ids)


def test_the_join_carries_what_kafka_requires_and_steady_heartbeats_nothing_optional() -> None:
    member = ConsumerMember("g", 0, ["b", "a"])
    join, reporting = member.next_request()
    assert (join.member_epoch, join.member_id, join.subscribed_topic_names) == (0, member.member_id, ("a", "b"))
    assert join.rebalance_timeout.total_seconds() == 300 and join.topic_partitions == () and reporting == frozenset()
    member.on_answer(answer(5), reporting)
    steady, reporting = member.next_request()
    assert steady.member_epoch == 5 and reporting is None
    assert (steady.topic_partitions, steady.subscribed_topic_names, steady.server_assignor, steady.instance_id,
            steady.rack_id) == (None, None, None, None, None)
    assert steady.rebalance_timeout.total_seconds() == -0.001


def test_an_assignment_is_reconciled_and_acknowledged_once_revocations_included() -> None:
    member = ConsumerMember("g", 0, ["t"])
    member.on_answer(answer(1, {T1: [0, 1, 2]}), frozenset())
    assert member.must_ack and member.owned == {(T1, 0), (T1, 1), (T1, 2)} and member.reported == frozenset()
    ack, reporting = member.next_request()
    assert partitions_of(ack.topic_partitions) == member.owned == reporting
    member.must_ack = False
    member.on_answer(answer(1, {T1: [0, 1, 2]}), reporting)  # the ack's answer repeats the assignment
    assert not member.must_ack and member.reported == member.owned and member.revocations == 0
    member.on_answer(answer(1, {T1: [0, 1]}), None)  # partition 2 goes: the smaller set is reported next
    assert member.must_ack and member.revocations == 1 and member.owned == {(T1, 0), (T1, 1)}
    assert partitions_of(member.next_request()[0].topic_partitions) == {(T1, 0), (T1, 1)}
    member.must_ack = False
    member.on_answer(answer(2), None)  # a new epoch without an assignment changes nothing owned
    assert member.epoch == 2 and not member.must_ack


def test_an_error_answer_is_a_finding() -> None:
    member = ConsumerMember("g", 3, ["t"])
    with pytest.raises(HeartbeatFailed, match="fenced_member_epoch"):
        member.on_answer(answer(0, error=ErrorCode.fenced_member_epoch), None)


def stable_pair() -> tuple[GroupView, ConsumerMember, ConsumerMember]:
    a, b = ConsumerMember("g", 0, ["t"]), ConsumerMember("g", 1, ["t"])
    view = GroupView([a, b], partitions=4)
    a.on_answer(answer(3, {T1: [0, 1]}), frozenset())
    b.on_answer(answer(3, {T2: [0, 1]}), frozenset())
    for m in (a, b):
        m.must_ack = False
        m.on_answer(answer(3), m.owned)
    return view, a, b


def test_the_view_is_stable_only_at_one_epoch_with_everything_owned_once_and_reported() -> None:
    view, a, b = stable_pair()
    assert view.is_stable()
    view.expect_epoch_above(3)
    assert not view.is_stable()
    a.on_answer(answer(4), None)
    assert not view.is_stable()  # b is still at epoch 3
    b.on_answer(answer(4, {T2: [0]}), None)  # b gives partition 1 up and has not reported it
    assert not view.is_stable()
    b.must_ack = False
    b.on_answer(answer(4), b.owned)
    assert not view.is_stable()  # T2-1 is owned by nobody yet
    a.on_answer(answer(4, {T1: [0, 1], T2: [1]}), None)
    a.must_ack = False
    a.on_answer(answer(4), a.owned)
    view.observe(a)
    assert view.stable.is_set() and view.stable_at is not None and view.max_double_owned == 0


def test_the_view_counts_partitions_owned_twice() -> None:
    view, a, b = stable_pair()
    a.on_answer(answer(3, {T1: [0, 1], T2: [0]}), None)
    view.observe(a)
    assert view.max_double_owned == 1 and not view.stable.is_set()


def test_steady_frames_and_their_check_read_each_members_epoch() -> None:
    _view, a, b = stable_pair()
    frames = steady_frames([a, b])
    assert [int.from_bytes(f[8:12], "big") for f in frames] == [1, 2]  # correlation ids
    check = SteadyCheck([a, b])
    check(encode_response(1, 1, answer(3, member_id=a.member_id))[4:])
    with pytest.raises(ValueError, match="epoch 4"):
        check(encode_response(1, 1, answer(4, member_id=b.member_id))[4:])
    with pytest.raises(ValueError, match="unknown_member_id"):
        check(encode_response(1, 1, answer(3, member_id=b.member_id, error=ErrorCode.unknown_member_id))[4:])
