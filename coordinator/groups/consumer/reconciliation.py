"""The reconciliation engine of KIP-848 consumer groups (Kafka's CurrentAssignmentBuilder): given a member's
current assignment and the group's target assignment, the next state of the member.

Followed: Kafka 4.1's CurrentAssignmentBuilder, i.e. the 4.0 state machine plus KAFKA-19431 (a member's
target is filtered by its subscription: partitions of topics it no longer subscribes to are revoked, at
once when its subscription changes even without a new target; leaving UNREVOKED_PARTITIONS the epoch
moves to min(epoch + 1, target epoch)). Not the later trunk changes (a partition pending revocation by
the member itself counted as free; previous_member_epoch bumped on a subscription-only revocation).

The rules, in short:
- a partition the member keeps stays; one it must give up goes to partitions_pending_revocation and the
  member stays at its epoch (UNREVOKED_PARTITIONS) until its heartbeat no longer reports it as owned;
- a new partition is handed over only once no member owns it (partition_epoch == -1), else the member
  moves to the target epoch in UNRELEASED_PARTITIONS and gets it on a later heartbeat;
- every epoch move sets previous_member_epoch to the epoch it had (Kafka's Builder.updateMemberEpoch),
  even when the epoch does not change.
`owned_partitions` is what the heartbeat reported (OwnedTopicPartitions); None means the member did not
send it, which counts as still owning everything it must revoke (Kafka's ownsRevokedPartitions).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Set
from dataclasses import replace

from coordinator.errors import FencedMemberEpoch
from coordinator.groups.consumer.model import (
    NO_OWNER_EPOCH,
    Assignment,
    ConsumerGroupMember,
    MemberState,
    TopicId,
)

#: (topic id, partition) -> the epoch of the member owning it, NO_OWNER_EPOCH (-1) when nobody does
PartitionEpochFn = Callable[[TopicId, int], int]
#: what a heartbeat reports as owned: topic id -> partitions; None when the field was not sent
OwnedPartitions = Mapping[TopicId, Collection[int]] | None

_NONE: frozenset[int] = frozenset()


def next_member_state(
    member: ConsumerGroupMember,
    target_epoch: int,
    target_assignment: Assignment,
    partition_epoch: PartitionEpochFn,
    owned_partitions: OwnedPartitions,
    *,
    subscribed_topic_ids: Set[TopicId],
    has_subscription_changed: bool = False,
) -> ConsumerGroupMember:
    """The member's next state, or `member` itself when it cannot move (CurrentAssignmentBuilder.build).

    `subscribed_topic_ids`: the existing topics the member subscribes to (subscription.subscribed_topic_ids);
    `has_subscription_changed`: this heartbeat changed the member's subscription.
    Raises FencedMemberEpoch for a member in the UNKNOWN state that still reports partitions (or none at all).
    """
    rec = _Reconciler(member, target_epoch, target_assignment, partition_epoch, owned_partitions,
                      subscribed_topic_ids)
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return rec.compute_next(member.member_epoch)
        return rec.drop_unsubscribed() if has_subscription_changed else member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if rec.owns_any(member.partitions_pending_revocation):
            return rec.drop_unsubscribed() if has_subscription_changed else member
        # Revoked: on to the next epoch, but never past the target (a subscription change may have put
        # the member here without a new target assignment).
        return rec.compute_next(min(member.member_epoch + 1, target_epoch))
    if state is MemberState.UNRELEASED_PARTITIONS:
        return rec.compute_next(member.member_epoch)
    # UNKNOWN: a state from a newer coordinator; the member must drop everything and rejoin.
    if owned_partitions is None or len(owned_partitions) > 0:
        raise FencedMemberEpoch("The consumer group member is in a unknown state. "
                                "The member must abandon all its partitions and rejoin.")
    return rec.compute_next(target_epoch)


class _Reconciler:
    """One reconciliation step's inputs, and the two ways to move a member."""

    __slots__ = ("member", "target_epoch", "target", "partition_epoch", "owned", "subscribed")

    def __init__(self, member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                 partition_epoch: PartitionEpochFn, owned: OwnedPartitions, subscribed: Set[TopicId]) -> None:
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.partition_epoch = partition_epoch
        self.owned = owned
        self.subscribed = subscribed

    def owns_any(self, revoking: Assignment) -> bool:
        """Whether the reported owned partitions still hold one of `revoking` (None: assume they do)."""
        if self.owned is None:
            return True
        for topic_id, partitions in self.owned.items():
            pending = revoking.get(topic_id)
            if pending and any(p in pending for p in partitions):
                return True
        return False

    def compute_next(self, revoking_epoch: int) -> ConsumerGroupMember:
        """Kafka's computeNextAssignment; `revoking_epoch` is the epoch kept while partitions are revoked."""
        member = self.member
        current = member.assigned_partitions
        kept: dict[TopicId, frozenset[int]] = {}
        revoking: dict[TopicId, frozenset[int]] = {}
        assigning: dict[TopicId, frozenset[int]] = {}
        unreleased = False
        for topic_id in self.target.keys() | current.keys():
            target = self.target.get(topic_id, _NONE) if topic_id in self.subscribed else _NONE
            now = current.get(topic_id, _NONE)
            keep = now if now <= target else now & target  # reuse the set when nothing goes
            if keep:
                kept[topic_id] = keep
            if len(keep) != len(now):
                revoking[topic_id] = now - keep
            new = target - keep
            if new:
                free = frozenset(p for p in new if self.partition_epoch(topic_id, p) == NO_OWNER_EPOCH)
                unreleased = unreleased or len(free) != len(new)
                if free:
                    assigning[topic_id] = free
        if revoking and self.owns_any(revoking):
            return self._moved(MemberState.UNREVOKED_PARTITIONS, revoking_epoch, kept, revoking)
        for topic_id, free in assigning.items():
            already = kept.get(topic_id)
            kept[topic_id] = free if already is None else already | free
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return self._moved(state, self.target_epoch, kept, {})

    def _moved(self, state: MemberState, epoch: int, assigned: Assignment, revoking: Assignment
               ) -> ConsumerGroupMember:
        member = self.member
        new = replace(member, state=state, member_epoch=epoch, previous_member_epoch=member.member_epoch,
                      assigned_partitions=assigned, partitions_pending_revocation=revoking)
        return member if new == member else new

    def drop_unsubscribed(self) -> ConsumerGroupMember:
        """Kafka's updateCurrentAssignment: move the partitions of topics the member no longer subscribes
        to from its assignment to its revocations, without touching its epoch."""
        member = self.member
        current = member.assigned_partitions
        gone = [topic_id for topic_id in current if topic_id not in self.subscribed]
        if not gone:
            return member
        assigned = {t: ps for t, ps in current.items() if t in self.subscribed}
        revoking = dict(member.partitions_pending_revocation)
        for topic_id in gone:
            revoking[topic_id] = revoking.get(topic_id, _NONE) | current[topic_id]
        if self.owns_any(revoking):
            return replace(member, state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=assigned,
                           partitions_pending_revocation=revoking)
        # Already revoked by the client: only the assignment shrinks (only reachable from STABLE).
        return replace(member, assigned_partitions=assigned)
