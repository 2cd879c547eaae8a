"""The uniform assignor when members subscribe to different topics (Kafka's
UniformHeterogeneousAssignmentBuilder, Kafka 4.0's rework of KAFKA-17710).

1. Keep every member's current partitions of the topics it still subscribes to.
2. Hand the partitions nobody holds to the least loaded subscribers, topic by topic: topics with the most
   partitions per subscriber first (then fewer subscribers, then topic id).
3. Balance: topic by topic, move partitions from a topic's most loaded subscribers to its least loaded ones
   until their counts differ by at most one; loop over the topics until a whole round moves nothing (at most
   16 rounds, as Kafka). Perfect balance when the subscribers of a topic share their subscriptions; near
   balance otherwise.

Members are numbered in member id order (Kafka: the group's hash order; its tests sort them too), and ties
between equally loaded members go to the lower number.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.groups.consumer.assignor_support import empty_result, frozen, partition_count, topic_order
from coordinator.groups.consumer.load_ranges import LoadRanges
from coordinator.groups.consumer.model import Assignment, MemberSubscription, TopicId, TopicMetadata

MAX_BALANCE_ROUNDS = 16
NO_OWNER = -1


def assign_heterogeneous(members: Mapping[str, MemberSubscription],
                         topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
    """The new target assignment of a group whose members may subscribe to different topics."""
    return _Builder(members, topics).build()


class _Builder:
    def __init__(self, members: Mapping[str, MemberSubscription], topics: Mapping[TopicId, TopicMetadata]):
        self.members = members
        self.member_ids = sorted(members)
        self.subscribers: dict[TopicId, list[int]] = {}  # ascending member numbers
        self.counts: dict[TopicId, int] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in members[member_id].subscribed_topic_ids:
                if topic_id not in self.counts:
                    self.counts[topic_id] = partition_count(topics, topic_id)
                self.subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {topic_id: [NO_OWNER] * count for topic_id, count in self.counts.items()}
        self.target: list[dict[TopicId, set[int]]] = [{} for _ in self.member_ids]

    def build(self) -> dict[str, Assignment]:
        if not self.counts:
            return empty_result(self.member_ids)
        self._keep_current()
        self._assign_unowned()
        self._balance()
        return {member_id: frozen(self.target[index]) for index, member_id in enumerate(self.member_ids)}

    def _topic_key(self, topic_id: TopicId) -> tuple[float, int, tuple[int, int]]:
        subscribers = len(self.subscribers[topic_id])
        return -(self.counts[topic_id] / subscribers), subscribers, topic_order(topic_id)

    def _keep_current(self) -> None:
        """Step 1: keep the partitions of still-subscribed topics (within range, first holder wins)."""
        for index, member_id in enumerate(self.member_ids):
            member = self.members[member_id]
            for topic_id, partitions in member.assignment.items():
                if topic_id not in member.subscribed_topic_ids:
                    continue
                owners = self.owners[topic_id]
                for partition in sorted(partitions):
                    if 0 <= partition < len(owners) and owners[partition] == NO_OWNER:
                        self._add(topic_id, partition, index)

    def _assign_unowned(self) -> None:
        """Step 2: the partitions nobody holds, each to the least loaded subscriber of its topic."""
        ranges = LoadRanges(self.sizes)
        for topic_id in sorted(self.counts, key=self._topic_key):
            unowned = [p for p, owner in enumerate(self.owners[topic_id]) if owner == NO_OWNER]
            if not unowned:
                continue
            ranges.reset(self.subscribers[topic_id])
            for partition in unowned:
                self._add(topic_id, partition, ranges.next_least_loaded())

    def _balance(self) -> None:
        """Step 3: rounds over the topics with two or more subscribers until one moves nothing."""
        movable = sorted((t for t, subs in self.subscribers.items() if len(subs) >= 2), key=self._topic_key)
        ranges = LoadRanges(self.sizes)
        last_moved = -1  # the topic that last moved partitions; reaching it again without a move ends
        for _ in range(MAX_BALANCE_ROUNDS):
            for position, topic_id in enumerate(movable):
                if position == last_moved:
                    return
                if self._balance_topic(topic_id, ranges) > 0 or last_moved == -1:
                    last_moved = position

    def _balance_topic(self, topic_id: TopicId, ranges: LoadRanges) -> int:
        """Moves partitions of one topic from its most to its least loaded subscribers; the number moved."""
        if ranges.reset(self.subscribers[topic_id]) <= 1:
            return 0
        owners = self.owners[topic_id]
        # the topic's partitions grouped by owner, so each owner's partitions form a slice [start, end)
        ordered = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for position, partition in enumerate(ordered):
            start.setdefault(owners[partition], position)
            end[owners[partition]] = position + 1
        moved = 0
        while not ranges.is_balanced():
            donor = ranges.next_most_loaded()
            while donor != NO_OWNER and end.get(donor, 0) - start.get(donor, 0) <= 0:
                ranges.exclude_most_loaded()  # it has nothing of this topic to give
                donor = ranges.next_most_loaded()
            if donor == NO_OWNER:
                break
            end[donor] -= 1
            partition = ordered[end[donor]]  # the donor's highest partition
            receiver = ranges.next_least_loaded()
            if ranges.is_balanced():
                break
            self._remove(topic_id, partition, donor)
            self._add(topic_id, partition, receiver)
            moved += 1
        return moved

    def _add(self, topic_id: TopicId, partition: int, index: int) -> None:
        self.target[index].setdefault(topic_id, set()).add(partition)
        self.owners[topic_id][partition] = index
        self.sizes[index] += 1

    def _remove(self, topic_id: TopicId, partition: int, index: int) -> None:
        self.target[index][topic_id].discard(partition)
        self.owners[topic_id][partition] = NO_OWNER
        self.sizes[index] -= 1
