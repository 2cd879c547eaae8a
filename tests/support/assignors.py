"""Helpers for the server-side assignor tests: Kafka's test topic ids, members, topics and assignments
written briefly, and the checks every assignment must pass."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping

from coordinator.groups.consumer.model import Assignment, MemberSubscription, TopicId, TopicMetadata


def kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's Uuid.fromString: URL-safe base64 of the 16 bytes, unpadded."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


# the topic ids of Kafka's OptimizedUniformAssignmentBuilderTest / UniformHeterogeneousAssignmentBuilderTest
T1 = kafka_uuid("T1-A4s3VTwiI5CTbEp6POw")
T2 = kafka_uuid("T2-B4s3VTwiI5YHbPp6YUe")
T3 = kafka_uuid("T3-CU8fVTLCz5YMkLoDQsa")
T4 = kafka_uuid("T4-Tw9fVTLCz5HbPp6YQsa")


def topics(**partitions: int) -> dict[TopicId, TopicMetadata]:
    """topics(T1=3, T3=2): the metadata of Kafka's test topics by their short name."""
    named = {"T1": T1, "T2": T2, "T3": T3, "T4": T4}
    return {named[name]: TopicMetadata(named[name], f"topic{name[1:]}", count) for name, count in partitions.items()}


def assignment(*entries: tuple[uuid.UUID, Iterable[int]]) -> dict[TopicId, frozenset[int]]:
    """assignment((T1, [0, 1]), (T3, [0]))"""
    return {topic_id: frozenset(parts) for topic_id, parts in entries}


def member(member_id: str, subscribed: Iterable[TopicId], current: Assignment | None = None,
           instance_id: str | None = None) -> MemberSubscription:
    return MemberSubscription(member_id, frozenset(subscribed), dict(current or {}), instance_id)


def group(*members: MemberSubscription) -> dict[str, MemberSubscription]:
    return {m.member_id: m for m in members}


def owners(result: Mapping[str, Assignment]) -> dict[tuple[TopicId, int], str]:
    """Each assigned partition's member; fails when a partition has two."""
    seen: dict[tuple[TopicId, int], str] = {}
    for member_id, assigned in result.items():
        for topic_id, parts in assigned.items():
            assert parts, f"{member_id} has an empty entry for {topic_id}"
            for partition in parts:
                assert (topic_id, partition) not in seen, f"{topic_id}-{partition} assigned twice"
                seen[(topic_id, partition)] = member_id
    return seen


def check_valid(members: Mapping[str, MemberSubscription], metadata: Mapping[TopicId, TopicMetadata],
                result: Mapping[str, Assignment]) -> None:
    """Every member present; every subscribed partition assigned exactly once, to a subscriber."""
    assert set(result) == set(members)
    assigned = owners(result)
    expected = {(t, p) for m in members.values() for t in m.subscribed_topic_ids
                for p in range(metadata[t].partitions)}
    assert set(assigned) == expected
    for (topic_id, _), member_id in assigned.items():
        assert topic_id in members[member_id].subscribed_topic_ids


def sizes(result: Mapping[str, Assignment]) -> dict[str, int]:
    return {member_id: sum(len(p) for p in assigned.values()) for member_id, assigned in result.items()}


def moved(before: Mapping[str, Assignment], after: Mapping[str, Assignment]) -> set[tuple[TopicId, int]]:
    """The partitions that changed owner between two assignments (ones before that nobody owns after, or
    owned by another member)."""
    old, new = owners(before), owners(after)
    return {tp for tp, owner in new.items() if tp in old and old[tp] != owner}
