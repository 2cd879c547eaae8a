"""The uniform assignor when every member subscribes to the same topics (Kafka's
UniformHomogeneousAssignmentBuilder, with KAFKA-18688's stability fix of Kafka 4.1).

Balance first: each member ends with floor(total / members) partitions, and total % members of them with
one more. Then stickiness: a member keeps what it had up to its quota and only the surplus moves. Any member
that already holds more than the floor may keep the one extra partition (KAFKA-18688: before it, the extras
went to the first members in iteration order, which moved partitions of an already balanced group). The
extras nobody kept go to the last members, in member order, that did not keep one.

Orders, for determinism: members by member id (Kafka: the group's hash order); a member's partitions by topic
(Kafka's topic id order) then partition, the lowest kept first; the partitions to hand out are the ones nobody
held (by topic, then partition; Kafka: its topic set's hash order) followed by the revoked ones.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.groups.consumer.assignor_support import (
    PartitionAssignorError,
    empty_result,
    frozen,
    partition_count,
    topic_order,
)
from coordinator.groups.consumer.model import Assignment, MemberSubscription, TopicId, TopicMetadata

TopicPartition = tuple[TopicId, int]


def assign_homogeneous(members: Mapping[str, MemberSubscription],
                       topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
    """The new target assignment of a group whose members all subscribe to the same topics."""
    member_ids = sorted(members)
    if not member_ids:
        return {}
    subscribed = members[member_ids[0]].subscribed_topic_ids
    if not subscribed:
        return empty_result(member_ids)
    counts = {topic_id: partition_count(topics, topic_id) for topic_id in subscribed}
    minimum, extras = divmod(sum(counts.values()), len(member_ids))

    held = _valid_holdings(member_ids, members, counts)
    claimed = {tp for tps in held.values() for tp in tps}
    pool: list[TopicPartition] = [
        (topic_id, partition)
        for topic_id in sorted(counts, key=topic_order)
        for partition in range(counts[topic_id])
        if (topic_id, partition) not in claimed
    ]

    kept: dict[str, list[TopicPartition]] = {}
    room: list[str] = []  # the members that did not keep an extra partition, in member order
    for member_id in member_ids:
        valid = held[member_id]
        quota = minimum
        if len(valid) > minimum and extras > 0:
            quota += 1
            extras -= 1
        else:
            room.append(member_id)
        kept[member_id] = valid[:quota]
        pool.extend(valid[quota:])

    taken = 0
    with_extra = set(room[len(room) - extras:]) if extras else set()  # the extras left go to the last ones
    for member_id in room:
        wanted = minimum - len(kept[member_id]) + (1 if member_id in with_extra else 0)
        if wanted > 0:
            kept[member_id].extend(pool[taken:taken + wanted])
            taken += wanted
    if taken < len(pool):
        raise PartitionAssignorError("Partitions were left unassigned")
    return {member_id: _as_assignment(kept[member_id]) for member_id in member_ids}


def _valid_holdings(member_ids: list[str], members: Mapping[str, MemberSubscription],
                    counts: Mapping[TopicId, int]) -> dict[str, list[TopicPartition]]:
    """Each member's current partitions that it may keep: of a subscribed topic, within the topic's
    partitions, and not already held by a member earlier in order; sorted."""
    seen: set[TopicPartition] = set()
    held: dict[str, list[TopicPartition]] = {}
    for member_id in member_ids:
        valid: list[TopicPartition] = []
        assignment = members[member_id].assignment
        for topic_id in sorted(assignment, key=topic_order):
            count = counts.get(topic_id)
            if count is None:
                continue  # no longer subscribed: the whole topic goes
            for partition in sorted(assignment[topic_id]):
                tp = (topic_id, partition)
                if 0 <= partition < count and tp not in seen:
                    seen.add(tp)
                    valid.append(tp)
        held[member_id] = valid
    return held


def _as_assignment(partitions: list[TopicPartition]) -> Assignment:
    by_topic: dict[TopicId, list[int]] = {}
    for topic_id, partition in partitions:
        by_topic.setdefault(topic_id, []).append(partition)
    return frozen(by_topic)
