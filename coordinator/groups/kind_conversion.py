"""The conversions of Kafka's online migration between the classic and the consumer group protocols
(ConsumerGroup.fromClassicGroup / createConsumerGroupRecords, ClassicGroup.fromConsumerGroup /
createClassicGroupRecords), as pure functions: a group in, the other kind of group (or its records) out.

The upgrade keeps the classic group's last generation: every member joins the consumer group at that epoch,
Stable, owning (and targeted at) the partitions of its last classic assignment. The downgrade keeps the consumer
group's epoch as the generation and gives each remaining member its target assignment, serialized with the
consumer-protocol version of its JoinGroup metadata; the shard then starts a rebalance.

Both raise rules.consumer_protocol.SubscriptionError when a member's consumer-protocol bytes are malformed
(Kafka's SchemaException: the group is not converted).
"""

from __future__ import annotations

from coordinator.groups.classic_group import ClassicGroup, GroupState
from coordinator.groups.classic_member import Member
from coordinator.groups.consumer import records as rec
from coordinator.groups.consumer.group import PROTOCOL_TYPE, ConsumerGroup
from coordinator.groups.consumer.model import Assignment, ConsumerGroupMember, MemberState
from coordinator.groups.consumer.topic_view import TopicView
from coordinator.records.types import GroupMetadataRecord, Record
from rules.consumer_protocol import decode_assignment, decode_subscription, encode_assignment, protocol_version
from storage.consumer_group_records import ClassicMemberMetadata, ClassicProtocol


def uses_consumer_protocol(group: ClassicGroup) -> bool:
    """ClassicGroup.usesConsumerGroupProtocol."""
    return group.protocol_type == PROTOCOL_TYPE


def _assignment(data: bytes, topics: TopicView) -> Assignment:
    """toTopicPartitionMap: a ConsumerProtocolAssignment by topic id (topics that no longer exist dropped)."""
    _version, partitions, _user_data = decode_assignment(data)
    out: dict = {}
    for name, numbers in partitions:
        topic = topics.topic(name)
        if topic is not None and numbers:
            out[topic.topic_id] = out.get(topic.topic_id, frozenset()) | frozenset(numbers)
    return out


def consumer_group_from_classic(classic: ClassicGroup, topics: TopicView) -> ConsumerGroup:
    """ConsumerGroup.fromClassicGroup: the group as its records will rebuild it (the shard writes
    `consumer_group_records` of it; their replay makes the live group)."""
    group = ConsumerGroup(classic.group_id)
    epoch = classic.generation_id
    group.group_epoch = epoch
    group.assignment_epoch = epoch
    for m in classic.members.values():
        assigned = _assignment(m.assignment, topics)
        subscription = decode_subscription(m.metadata(classic.protocol_name))
        member = ConsumerGroupMember(
            m.member_id, member_epoch=epoch, previous_member_epoch=epoch, state=MemberState.STABLE,
            instance_id=m.group_instance_id, rack_id=subscription.rack_id, rebalance_timeout_ms=m.rebalance_timeout_ms,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=frozenset(subscription.topics),
            assigned_partitions=assigned, classic=ClassicMemberMetadata(
                m.session_timeout_ms, tuple(ClassicProtocol(name, data) for name, data in m.protocols)))
        group.set_target(m.member_id, assigned)
        group.update_member(member)
    return group


def consumer_group_records(group: ConsumerGroup) -> list[Record]:
    """ConsumerGroup.createConsumerGroupRecords, in Kafka's order."""
    gid = group.group_id
    records: list[Record] = [rec.new_consumer_group_member_subscription_record(gid, m) for m in group.members.values()]
    records.append(rec.new_consumer_group_epoch_record(gid, group.group_epoch))
    records += [rec.new_consumer_group_target_assignment_record(gid, member_id, group.target_of(member_id))
                for member_id in group.members]
    records.append(rec.new_consumer_group_target_assignment_epoch_record(gid, group.group_epoch))
    records += [rec.new_consumer_group_current_assignment_record(gid, m) for m in group.members.values()]
    return records


def classic_group_from_consumer(group: ConsumerGroup, leaving: set[str], topics: TopicView,
                                now_wall_ms: int) -> ClassicGroup:
    """ClassicGroup.fromConsumerGroup: a Stable classic group of the members not in `leaving` (all classic-protocol
    members), at the consumer group's epoch, each member's assignment its target assignment."""
    classic = ClassicGroup(group.group_id, now_wall_ms)
    for m in group.members.values():
        if m.member_id in leaving:
            continue
        assert m.classic is not None, "only classic-protocol members remain in a downgraded group"
        classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                           m.classic.session_timeout_ms, PROTOCOL_TYPE,
                           tuple((p.name, p.metadata) for p in m.classic.supported_protocols)))
    classic.generation_id = group.group_epoch
    classic.protocol_name = classic.select_protocol()
    for member in classic.members.values():
        target = group.target_assignment.get(member.member_id, {})
        partitions = sorted((name, sorted(numbers)) for topic_id, numbers in target.items()
                            if (name := topics.name_of(topic_id)) is not None)
        member.assignment = encode_assignment(partitions, protocol_version(member.metadata(classic.protocol_name)))
    classic.state = GroupState.STABLE
    classic.previous_state = GroupState.COMPLETING_REBALANCE
    classic.generation_members = frozenset(classic.members)
    return classic


def classic_group_record(classic: ClassicGroup) -> GroupMetadataRecord:
    """ClassicGroup.createClassicGroupRecords: its GroupMetadata record with every member's assignment."""
    return GroupMetadataRecord(classic.group_id, classic.metadata_value(classic.group_assignment()))
