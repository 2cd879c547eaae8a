"""What a consumer group (KIP-848) demands of OffsetCommit and OffsetFetch: Kafka's ConsumerGroup.validateOffsetCommit
and validateOffsetFetch, whose member epoch plays the classic generation's part, and its subscriptions for
OffsetDelete and expiry (isSubscribedToTopic)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.model import ConsumerGroupMember

#: members of consumer groups commit with OffsetCommit v9 or later (UNSUPPORTED_VERSION before)
MEMBER_COMMIT_FROM = 9


def commit_error(group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int,
                 transactional: bool = False) -> ErrorCode | None:
    """None when the commit may go on. An epoch < 0 on an empty group is an admin (or manual-assignment)
    commit."""
    if member_epoch < 0 and not group.members:
        return None
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if not transactional and member.classic is None and api_version < MEMBER_COMMIT_FROM:
        return ErrorCode.unsupported_version
    return _epoch_error(member, member_epoch)


def fetch_error(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
    """None when the fetch may go on: an admin's fetch (no member id, epoch < 0), or a member at its epoch."""
    if member_id is None and member_epoch < 0:
        return None
    member = group.members.get(member_id) if member_id is not None else None
    if member is None:
        return ErrorCode.unknown_member_id
    return _epoch_error(member, member_epoch)


def _epoch_error(member: ConsumerGroupMember, received: int) -> ErrorCode | None:
    """validateMemberEpoch: a classic member's generation is its member epoch (ILLEGAL_GENERATION when not)."""
    if received == member.member_epoch:
        return None
    return ErrorCode.illegal_generation if member.classic is not None else ErrorCode.stale_member_epoch


def is_subscribed(group: ConsumerGroup, topic: str) -> bool:
    """ModernGroup.isSubscribedToTopic: some member subscribes to it (by name; a regex subscriber's topics are
    in the subscription metadata)."""
    return topic in group.subscribed_topic_names or topic in group.subscription_metadata
