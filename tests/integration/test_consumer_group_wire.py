"""KIP-848 consumer groups on the wire, against the real server process: ConsumerGroupHeartbeat v0/v1 and
ConsumerGroupDescribe decoded by kio's reader, offsets under member epochs, ListGroups / DeleteGroups, and a
restart (SIGKILL) over the same log dir that keeps members, epochs and assignments (records replayed)."""

from __future__ import annotations

import datetime
import signal

from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest, TopicPartitions
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.static.primitive import i32Timedelta

from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

E = ErrorCode
MS = datetime.timedelta(milliseconds=1)


def beat(client: WireClient, member_id: str = "", epoch: int = 0, owned: dict | None = None,
         topics: tuple[str, ...] | None = ("orders",), group: str = "g", instance: str | None = None,
         regex: str | None = None):
    joining = epoch == 0
    return client.call(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance, rack_id=None,
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30) if joining else -MS),
        subscribed_topic_names=topics if joining else None, subscribed_topic_regex=regex, server_assignor=None,
        topic_partitions=() if joining else (None if owned is None else tuple(
            TopicPartitions(topic_id=t, partitions=tuple(sorted(ps))) for t, ps in owned.items()))))


def owned_of(answer) -> dict:
    return {tp.topic_id: set(tp.partitions) for tp in answer.assignment.topic_partitions}


def test_two_members_share_the_partitions_and_survive_a_restart(tmp_path):
    server = start_server(str(tmp_path / "data"), topics={"orders": 4})
    try:
        with WireClient(server.host, server.port) as c:
            a = beat(c)
            assert a.error_code is E.none and a.member_epoch == 1, a
            assert a.heartbeat_interval == datetime.timedelta(seconds=5)
            assert sum(len(p) for p in owned_of(a).values()) == 4
            b = beat(c)
            assert b.error_code is E.none and b.member_epoch == 2 and owned_of(b) == {}
            a2 = beat(c, a.member_id, 1, owned=owned_of(a))  # revoke half
            kept = owned_of(a2)
            assert a2.member_epoch == 1 and sum(len(p) for p in kept.values()) == 2
            a3 = beat(c, a.member_id, 1, owned=kept)
            assert a3.member_epoch == 2 and a3.assignment is None  # nothing changed
            b2 = beat(c, b.member_id, 2, owned={})
            theirs = owned_of(b2)
            assert sum(len(p) for p in theirs.values()) == 2
            assert not any(set(kept.get(t, ())) & ps for t, ps in theirs.items())
            described = c.call(ConsumerGroupDescribeRequest(group_ids=("g", "nope"),
                                                            include_authorized_operations=False))
            group, missing = described.groups
            assert group.error_code is E.none and group.group_state == "Stable" and group.group_epoch == 2
            assert {m.member_id for m in group.members} == {a.member_id, b.member_id}
            assert all(m.member_type == 1 for m in group.members)
            assert {tp.topic_name for m in group.members for tp in m.assignment.topic_partitions} == {"orders"}
            assert missing.error_code is E.group_id_not_found
            listed = c.call(ListGroupsRequest(states_filter=(), types_filter=("consumer",)))
            assert [(g.group_id, g.group_state, g.group_type) for g in listed.groups] == [("g", "Stable", "consumer")]
        server.stop(signal.SIGKILL)
        server = start_server(str(tmp_path / "data"))
        with WireClient(server.host, server.port) as c:
            again = beat(c, a.member_id, 2, owned=kept)  # the same member, epoch and partitions after the restart
            assert again.error_code is E.none and again.member_epoch == 2, again
            described = c.call(ConsumerGroupDescribeRequest(group_ids=("g",), include_authorized_operations=False))
            [group] = described.groups
            assert group.group_epoch == 2 and group.assignment_epoch == 2
            by_member = {m.member_id: {tp.topic_id: set(tp.partitions) for tp in m.assignment.topic_partitions}
                         for m in group.members}
            assert by_member == {a.member_id: kept, b.member_id: theirs}
    finally:
        server.stop()


def test_offsets_follow_member_epochs_and_groups_are_deleted_when_empty(tmp_path):
    server = start_server(str(tmp_path / "data"), topics={"orders": 2})
    try:
        with WireClient(server.host, server.port) as c:
            a = beat(c)

            def commit(member_id: str, epoch: int) -> ErrorCode:
                answer = c.call(OffsetCommitRequest(
                    group_id="g", generation_id_or_member_epoch=epoch, member_id=member_id, group_instance_id=None,
                    topics=(OffsetCommitRequestTopic(name="orders", partitions=(OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                        committed_metadata=""),)),)))
                return answer.topics[0].partitions[0].error_code

            assert commit(a.member_id, 1) is E.none
            assert commit(a.member_id, 0) is E.stale_member_epoch
            assert commit("stranger", 1) is E.unknown_member_id
            deleted = c.call(DeleteGroupsRequest(groups_names=("g",)))
            assert deleted.results[0].error_code is E.non_empty_group
            left = beat(c, a.member_id, -1, topics=None)
            assert left.error_code is E.none and left.member_epoch == -1
            deleted = c.call(DeleteGroupsRequest(groups_names=("g",)))
            assert deleted.results[0].error_code is E.none
            described = c.call(ConsumerGroupDescribeRequest(group_ids=("g",), include_authorized_operations=False))
            assert described.groups[0].error_code is E.group_id_not_found
    finally:
        server.stop()


def test_heartbeat_errors_carry_kafka_s_codes_and_messages(tmp_path):
    server = start_server(str(tmp_path / "data"), topics={"orders": 1})
    try:
        with WireClient(server.host, server.port) as c:
            bad = beat(c, topics=())
            assert bad.error_code is E.invalid_request and "SubscribedTopicNames" in (bad.error_message or "")
            bad = beat(c, topics=None, regex="(")
            assert bad.error_code is E.invalid_regular_expression
            unknown = beat(c, "m", 4, owned={})
            assert unknown.error_code is E.group_id_not_found
            a = beat(c)
            fenced = beat(c, a.member_id, 9, owned={})
            assert fenced.error_code is E.fenced_member_epoch
            metadata = c.call(MetadataRequest(topics=(MetadataRequestTopic(topic_id=None, name="orders"),),
                                              allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False))
            topic_id = metadata.topics[0].topic_id
            assert owned_of(a) == {topic_id: {0}}  # the assignment names the topic by its id
    finally:
        server.stop()
