"""Which member epoch owns each partition of a consumer group (Kafka's ConsumerGroup.currentPartitionEpoch,
kept by updateMember / removeMember through maybeUpdatePartitionEpoch, addPartitionEpochs and
removePartitionEpochs).

A member owns its assigned partitions and its partitions pending revocation, at its member epoch. The
reconciliation hands a partition to a member only when `partition_epoch` says nobody owns it (-1), so a
partition owned twice means a bug: Kafka throws IllegalStateException, we raise IllegalStateError.

Kafka removes all of the old member's epochs and adds all of the new member's; `update_member` gives the
same result and the same errors but, when the member epoch did not change, touches only the partitions
that changed (topics whose sets are the very same objects are skipped without looking inside). It
checks everything before changing anything, so a failed update leaves the map as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from coordinator.groups.consumer.model import NO_OWNER_EPOCH, Assignment, ConsumerGroupMember, TopicId

_NONE: frozenset[int] = frozenset()


class IllegalStateError(RuntimeError):
    """A partition would be owned twice, or released at an epoch it is not owned at (a coordinator bug;
    Kafka's IllegalStateException, answered as UNKNOWN_SERVER_ERROR)."""


class PartitionEpochs:
    """topic id -> partition -> the epoch of the member owning it."""

    __slots__ = ("_epochs",)

    def __init__(self) -> None:
        self._epochs: dict[TopicId, dict[int, int]] = {}

    def partition_epoch(self, topic_id: TopicId, partition: int) -> int:
        """The epoch of the partition's owner, -1 (NO_OWNER_EPOCH) when nobody owns it."""
        partitions = self._epochs.get(topic_id)
        return NO_OWNER_EPOCH if partitions is None else partitions.get(partition, NO_OWNER_EPOCH)

    __call__ = partition_epoch  # usable directly as reconciliation's partition_epoch function

    def copy(self) -> PartitionEpochs:
        """An independent copy (a live write replays into copies: ConsumerGroup.copy)."""
        other = PartitionEpochs()
        other._epochs = self.snapshot()
        return other

    def snapshot(self) -> dict[TopicId, dict[int, int]]:
        """A copy of the whole map (for tests and describe)."""
        return {t: dict(ps) for t, ps in self._epochs.items()}

    def add_partition_epochs(self, assignment: Assignment, epoch: int) -> None:
        """Kafka's addPartitionEpochs: raises when one of the partitions already has an owner."""
        for topic_id, partitions in assignment.items():
            self._check_free(topic_id, partitions, epoch, _NONE)
        for topic_id, partitions in assignment.items():
            self._set(topic_id, partitions, epoch)

    def remove_partition_epochs(self, assignment: Assignment, expected_epoch: int) -> None:
        """Kafka's removePartitionEpochs: raises when a partition is not owned at `expected_epoch`."""
        for topic_id, partitions in assignment.items():
            self._check_owned(topic_id, partitions, expected_epoch)
        for topic_id, partitions in assignment.items():
            self._clear(topic_id, partitions)

    def add_member(self, member: ConsumerGroupMember) -> None:
        self.update_member(None, member)

    def remove_member(self, member: ConsumerGroupMember) -> None:
        """Kafka's maybeRemovePartitionEpoch: release everything the member owns."""
        owned = [(t, _owned(member, t)) for t in _topics(member)]
        for topic_id, partitions in owned:
            self._check_owned(topic_id, partitions, member.member_epoch)
        for topic_id, partitions in owned:
            self._clear(topic_id, partitions)

    def update_member(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> None:
        """Kafka's maybeUpdatePartitionEpoch(old, new): old's epochs out, new's in."""
        if old is not None and old.member_epoch != new.member_epoch:
            topics: Iterable[TopicId] = set(_topics(old)) | set(_topics(new))
        elif old is not None:
            topics = [t for t in set(_topics(old)) | set(_topics(new)) if _changed(old, new, t)]
        else:
            topics = list(_topics(new))
        plan = []  # (topic, released, taken, epoch to check released against, epoch for taken)
        for topic_id in topics:
            before = _owned(old, topic_id) if old is not None else _NONE
            after = _owned(new, topic_id)
            if old is not None and old.member_epoch != new.member_epoch:
                released, taken = before, after
            else:
                released, taken = before - after, after - before
            if old is not None:
                self._check_owned(topic_id, released, old.member_epoch)
            self._check_free(topic_id, taken, new.member_epoch, released)
            plan.append((topic_id, released, taken))
        for topic_id, released, taken in plan:
            self._clear(topic_id, released)
            self._set(topic_id, taken, new.member_epoch)

    def _check_owned(self, topic_id: TopicId, partitions: Iterable[int], expected_epoch: int) -> None:
        current = self._epochs.get(topic_id, {})
        for p in partitions:
            epoch = current.get(p)
            if epoch != expected_epoch:
                raise IllegalStateError(f"Cannot remove the epoch {expected_epoch} from {topic_id}-{p} because "
                                        f"the partition is still owned at a different epoch {epoch}")

    def _check_free(self, topic_id: TopicId, partitions: Iterable[int], epoch: int, released: Set[int]) -> None:
        current = self._epochs.get(topic_id, {})
        for p in partitions:
            if p in current and p not in released:
                raise IllegalStateError(f"Cannot set the epoch of {topic_id}-{p} to {epoch} because the "
                                        f"partition is still owned at epoch {current[p]}")

    def _set(self, topic_id: TopicId, partitions: Iterable[int], epoch: int) -> None:
        if partitions:
            current = self._epochs.setdefault(topic_id, {})
            for p in partitions:
                current[p] = epoch

    def _clear(self, topic_id: TopicId, partitions: Iterable[int]) -> None:
        if partitions:
            current = self._epochs[topic_id]
            for p in partitions:
                del current[p]
            if not current:
                del self._epochs[topic_id]


def _topics(member: ConsumerGroupMember) -> Iterable[TopicId]:
    return member.assigned_partitions.keys() | member.partitions_pending_revocation.keys()


def _changed(old: ConsumerGroupMember, new: ConsumerGroupMember, topic_id: TopicId) -> bool:
    return (old.assigned_partitions.get(topic_id) is not new.assigned_partitions.get(topic_id)
            or old.partitions_pending_revocation.get(topic_id) is not new.partitions_pending_revocation.get(topic_id))


def _owned(member: ConsumerGroupMember, topic_id: TopicId) -> frozenset[int]:
    """The member's partitions of the topic; raises when it holds one both assigned and pending revocation
    (Kafka would add its epoch twice and throw)."""
    assigned = member.assigned_partitions.get(topic_id, _NONE)
    revoking = member.partitions_pending_revocation.get(topic_id, _NONE)
    if not revoking:
        return frozenset(assigned)
    if not assigned:
        return frozenset(revoking)
    both = assigned & revoking
    if both:
        raise IllegalStateError(f"{member.member_id} holds {topic_id}-{min(both)} both assigned and pending "
                                f"revocation at epoch {member.member_epoch}")
    return frozenset(assigned | revoking)
