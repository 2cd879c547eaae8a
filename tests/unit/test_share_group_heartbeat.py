"""ShareGroupHeartbeat as records + answers (Kafka's shareGroupHeartbeat), on a fake clock: join, the share
state initialization before assignment, several members sharing one partition, leave, session expiry,
fencing, bad input; every step's records replayed (also through their bytes) rebuild the same group."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from coordinator.groups.share.config_settings import ShareGroupSettings
from coordinator.groups.share.describe import describe
from coordinator.groups.share.heartbeat import HeartbeatRequest, apply, expire, heartbeat, initialized
from coordinator.groups.share.model import ShareGroup, replay_all
from storage import share_group_records as sg

FOO = uuid.UUID(int=1)
TOPICS = {"foo": (FOO, 1)}
SETTINGS = ShareGroupSettings(max_size=3)


class Groups:
    def __init__(self) -> None:
        self.groups: dict[str, ShareGroup] = {}
        self.log: list[tuple[bytes, bytes | None]] = []

    def beat(self, member: str, epoch: int, topics=("foo",), now=0.0, **extra):
        request = HeartbeatRequest("g", member, epoch, subscribed_topic_names=topics, client_id="c",
                                   client_host="/h", **extra)
        result = heartbeat(self.groups.get("g"), request, TOPICS, SETTINGS, now)
        if result.error == ErrorCode.none:
            self.log += [sg.encode(k, v) for k, v in result.records]
            apply(self.groups, "g", result, member)
        return result

    def write(self, records):
        self.log += [sg.encode(k, v) for k, v in records]
        apply(self.groups, "g", records)

    def reloaded(self) -> dict[str, ShareGroup]:
        groups: dict[str, ShareGroup] = {}
        records = []
        for key_bytes, value_bytes in self.log:
            key = sg.decode_key(key_bytes)
            decoded = sg.decode_value(key, value_bytes)
            records.append((key, None if decoded is None else decoded[1]))
        replay_all(groups, records)
        return groups


def _same(a: ShareGroup, b: ShareGroup) -> None:
    assert (a.group_epoch, a.assignment_epoch, a.metadata_hash, a.members, a.target, a.partition_state) == (
        b.group_epoch, b.assignment_epoch, b.metadata_hash, b.members, b.target, b.partition_state)


def test_join_initializes_share_state_then_assigns():
    g = Groups()
    first = g.beat("a", 0)
    assert first.error == ErrorCode.none and first.member_epoch == 1 and first.assignment == {}
    assert first.to_initialize == {FOO: frozenset({0})}  # no share state yet: nothing assignable
    kinds = [type(k).__name__ for k, _ in first.records]
    assert kinds == ["ShareGroupMemberMetadataKey", "ShareGroupMetadataKey", "ShareGroupStatePartitionMetadataKey",
                     "ShareGroupTargetAssignmentMemberKey", "ShareGroupTargetAssignmentMetadataKey",
                     "ShareGroupCurrentMemberAssignmentKey"]
    g.write(initialized(g.groups["g"], first.to_initialize, TOPICS))
    second = g.beat("a", 1, topics=None)
    assert second.member_epoch == 2 and second.assignment == {FOO: frozenset({0})}
    assert g.beat("a", 2, topics=None).records == []  # a steady heartbeat writes nothing
    _same(g.reloaded()["g"], g.groups["g"])


def test_several_members_share_one_partition_and_leave():
    g = Groups()
    g.beat("a", 0)
    g.write(initialized(g.groups["g"], {FOO: frozenset({0})}, TOPICS))
    joined = g.beat("b", 0)
    assert joined.assignment == {FOO: frozenset({0})}  # one partition, two members: both get it
    assert g.groups["g"].target == {"a": {FOO: frozenset({0})}, "b": {FOO: frozenset({0})}}
    d = describe(g.groups["g"])
    assert d.group_state == "Stable" and [m.member_id for m in d.members] == ["a", "b"] and d.assignor_name == "simple"
    left = g.beat("a", -1, topics=None)
    assert left.member_epoch == -1 and "a" not in g.groups["g"].members
    assert g.beat("a", 3, topics=None).error == ErrorCode.unknown_member_id
    _same(g.reloaded()["g"], g.groups["g"])


def test_session_expiry_fences_the_member():
    g = Groups()
    g.beat("a", 0, now=0)
    g.beat("b", 0, now=10_000)
    assert expire(g.groups["g"], "a", 44_999, TOPICS, SETTINGS) == []
    records = expire(g.groups["g"], "a", 45_000, TOPICS, SETTINGS)
    g.write(records)
    assert set(g.groups["g"].members) == {"b"}
    assert describe(g.groups["g"]).group_epoch == 3


def test_bad_input_and_fencing():
    g = Groups()
    assert g.beat("", 0).error == ErrorCode.invalid_request
    assert g.beat("a", 0, topics=()).error == ErrorCode.invalid_request
    assert g.beat("a", -2).error == ErrorCode.invalid_request
    assert g.beat("a", 5).error == ErrorCode.unknown_member_id
    g.beat("a", 0)
    assert g.beat("a", 7, topics=None).error == ErrorCode.fenced_member_epoch
    for member in "bc":
        g.beat(member, 0)
    assert g.beat("d", 0).error == ErrorCode.group_max_size_reached
    assert g.beat("a", 0).error == ErrorCode.none  # a known member rejoins at epoch 0


def test_subscription_change_bumps_and_reassigns():
    g = Groups()
    TOPICS["bar"] = (uuid.UUID(int=2), 2)
    try:
        g.beat("a", 0)
        epoch = g.groups["g"].group_epoch
        result = g.beat("a", g.groups["g"].members["a"].member_epoch, topics=("foo", "bar"))
        assert g.groups["g"].group_epoch == epoch + 1
        assert result.to_initialize == {uuid.UUID(int=2): frozenset({0, 1})}
        _same(g.reloaded()["g"], g.groups["g"])
    finally:
        del TOPICS["bar"]


def test_an_initialization_never_answered_is_asked_for_again_after_the_retry_interval():
    """group.share.initialize.retry.interval.ms (30 s): a partition still initializing that long after it was asked
    for (its InitializeShareGroupState never answered: the share coordinator had no owner for longer than the
    persister's retries) is asked for again by the next heartbeat, the record's timestamp moved to then; before
    that, heartbeats ask nothing."""
    g = Groups()
    first = g.beat("a", 0, now=1_000.0)
    assert first.to_initialize == {FOO: frozenset({0})}
    assert g.groups["g"].partition_state.initializing_topics[0].create_timestamp == 1_000
    retry = SETTINGS.initialize_retry_interval_ms
    assert retry == 30_000
    early = g.beat("a", 1, topics=None, now=1_000.0 + retry - 1)
    assert early.to_initialize == {} and early.records == []
    late = g.beat("a", 1, topics=None, now=1_000.0 + retry)
    assert late.to_initialize == {FOO: frozenset({0})}
    assert [type(k).__name__ for k, _ in late.records] == ["ShareGroupStatePartitionMetadataKey"]
    assert g.groups["g"].partition_state.initializing_topics[0].create_timestamp == 1_000 + retry
    assert g.beat("a", 1, topics=None, now=1_000.0 + retry + 1).to_initialize == {}
    g.write(initialized(g.groups["g"], late.to_initialize, TOPICS))  # answered this time: assignable
    assert g.beat("a", 1, topics=None, now=1_000.0 + 3 * retry).assignment == {FOO: frozenset({0})}
    _same(g.reloaded()["g"], g.groups["g"])


def test_the_retry_interval_is_at_least_offsets_commit_timeout():
    from coordinator.groups.share.config_settings import OFFSETS_COMMIT_TIMEOUT_MS, share_group_settings

    class Config:
        def __getattr__(self, name):
            return 1 if name == "group_share_initialize_retry_interval_ms" else 1000

    assert share_group_settings(Config()).initialize_retry_interval_ms == OFFSETS_COMMIT_TIMEOUT_MS == 5000
