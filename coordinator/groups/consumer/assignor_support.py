"""What the server-side assignors share: their error (Kafka's PartitionAssignorException), Kafka's
order of topic ids, the partition count of a subscribed topic, and the freezing of a result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from coordinator.groups.consumer.model import Assignment, MemberSubscription, TopicId, TopicMetadata


class PartitionAssignorError(Exception):
    """An assignor cannot assign (Kafka's PartitionAssignorException): a member subscribes to a topic
    the metadata does not know, or partitions were left over."""


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def topic_order(topic_id: TopicId) -> tuple[int, int]:
    """The sort key giving Kafka's Uuid.compareTo order: the two halves compared as signed longs
    (Python compares a UUID as one unsigned 128-bit number, which differs when a half's top bit is set)."""
    value = topic_id.int
    return _signed64(value >> 64), _signed64(value & ((1 << 64) - 1))


def partition_count(topics: Mapping[TopicId, TopicMetadata], topic_id: TopicId) -> int:
    """The partitions of a subscribed topic; PartitionAssignorError when the metadata does not have it."""
    metadata = topics.get(topic_id)
    if metadata is None:
        raise PartitionAssignorError(
            f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
    return metadata.partitions


def is_homogeneous(members: Iterable[MemberSubscription]) -> bool:
    """Whether every member subscribes to the same topics (Kafka's SubscriptionType.HOMOGENEOUS)."""
    first: frozenset[TopicId] | None = None
    for member in members:
        if first is None:
            first = member.subscribed_topic_ids
        elif member.subscribed_topic_ids != first:
            return False
    return True


def frozen(assignment: Mapping[TopicId, Iterable[int]]) -> dict[TopicId, frozenset[int]]:
    """An assignment as the model holds it: frozensets, topics without partitions left out."""
    return {topic_id: frozenset(parts) for topic_id, parts in assignment.items() if parts}


def empty_result(members: Iterable[str]) -> dict[str, Assignment]:
    return {member_id: {} for member_id in members}
