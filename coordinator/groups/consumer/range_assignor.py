"""Kafka's server-side RangeAssignor ("range"): each topic's partitions split into contiguous ranges over
its subscribers, so co-partitioned topics line up (a member gets the same partition numbers of every topic of
the same size that the same members subscribe to).

Kafka 4.0 rewrote it (KAFKA-16944) to recompute the ranges every time rather than keep the current
assignment: it is not sticky. What stability it has comes from the order of the subscribers: static members
(with an instance id) first, by instance id, so a static member that rejoins under a new member id gets its
old ranges back; then the dynamic members by member id. The first `partitions % subscribers` subscribers of a
topic get one partition more than the others.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.groups.consumer.assignor_support import partition_count
from coordinator.groups.consumer.model import Assignment, MemberSubscription, TopicId, TopicMetadata


class RangeAssignor:
    name = "range"

    def assign(self, members: Mapping[str, MemberSubscription],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        ordered = sorted(members.values(), key=_member_order)
        subscribers: dict[TopicId, list[str]] = {}
        for member in ordered:
            for topic_id in member.subscribed_topic_ids:
                subscribers.setdefault(topic_id, []).append(member.member_id)

        result: dict[str, dict[TopicId, frozenset[int]]] = {member.member_id: {} for member in ordered}
        for topic_id, member_ids in subscribers.items():
            quota, extra = divmod(partition_count(topics, topic_id), len(member_ids))
            start = 0
            for position, member_id in enumerate(member_ids):
                end = start + quota + (1 if position < extra else 0)
                if end > start:
                    result[member_id][topic_id] = frozenset(range(start, end))
                start = end
        return dict(result)


def _member_order(member: MemberSubscription) -> tuple[int, str, str]:
    """Static members first by instance id, then dynamic ones by member id (Kafka's sortMemberIds)."""
    if member.instance_id is not None:
        return 0, member.instance_id, member.member_id
    return 1, member.member_id, ""
