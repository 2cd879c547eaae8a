"""KIP-211 offset expiry decided from a group's replayed state (pure, no I/O).

Mirrors Kafka's new group coordinator for classic groups loaded from the log:

* GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue): a loaded group
  is EMPTY when its record has no members, else STABLE; an empty protocol type means
  "none". A group with offsets but no metadata record is a "simple" group: an EMPTY
  classic group without protocol type, generation 0 (OffsetMetadataManager.replay ->
  getOrMaybeCreateClassicGroup).
* ClassicGroup.offsetExpirationCondition: with a protocol type, an EMPTY group
  expires offsets measured from its current_state_timestamp (else each offset's
  commit timestamp); a STABLE "consumer" group whose subscribed topics are known
  expires offsets (of topics it no longer subscribes to) from their commit
  timestamp; any other group expires nothing. Without a protocol type (simple group)
  offsets expire from their commit timestamp.
* ClassicGroup.isSubscribedToTopic / computeSubscribedTopics: the union of the
  members' ConsumerProtocolSubscription topics (parsed with the v0 prefix); unknown
  (unparseable, or not a consumer group) means "subscribed" for consumer groups and
  "not subscribed" otherwise.
* OffsetExpirationConditionImpl.isOffsetExpired: an explicit v1 expire_timestamp wins
  (now >= expire_timestamp), else now - base >= offsets.retention.ms.
* OffsetMetadataManager.cleanupExpiredOffsets + GroupMetadataManager.maybeDeleteGroup:
  when every offset expired (or the group has none) and the group is EMPTY, the
  group itself is deleted (a GroupMetadataKey tombstone).

KIP-848 consumer groups (a group with live ConsumerGroup* records), ConsumerGroup in Kafka 4.0:
offsets expire from their commit timestamp (or an explicit expire_timestamp), except those of
topics the group subscribes to (isSubscribedToTopic: its members' subscribed topic names and
the topics its resolved regular expressions matched). Such a group is not deleted here: Kafka
deletes an empty consumer group with its own tombstones (ConsumerGroup.createGroupTombstoneRecords),
which the coordinator writes, not this job.

Not modelled: pending transactional offsets (Kafka keeps those from expiring).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from rules.consumer_protocol import SubscriptionError, subscribed_topics

CONSUMER_PROTOCOL_TYPE = "consumer"


class Member(Protocol):
    """What expiry reads of a group member: its ConsumerProtocolSubscription bytes."""

    @property
    def subscription(self) -> bytes: ...


class GroupMetadataValue(Protocol):
    """What expiry reads of a group's GroupMetadataValue: storage.records' (the Spark job's, from the log) or
    coordinator.records.types' (the live group as Kafka would load it: groups/expiry.py)."""

    @property
    def protocol_type(self) -> str: ...
    @property
    def protocol(self) -> str | None: ...
    @property
    def members(self) -> Sequence[Member]: ...
    @property
    def current_state_timestamp(self) -> int: ...


class CommitTimes(Protocol):
    """What expiry reads of an offset value: an OffsetCommitValue, or the coordinator's OffsetValue."""

    @property
    def commit_timestamp(self) -> int: ...
    @property
    def expire_timestamp(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ExpiryDecision:
    expired: tuple[tuple[str, int, str], ...]  # (topic, partition, reason)
    delete_group: bool


def group_state(value: GroupMetadataValue | None) -> str:
    """"Empty" or "Stable": the state Kafka gives a group loaded from the log."""
    return "Stable" if value is not None and value.members else "Empty"


def subscribed(value: GroupMetadataValue | None) -> set[str] | None:
    """computeSubscribedTopics: the topics, or None when Kafka would not know them."""
    if value is None or value.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not value.members:
        return set()
    if value.protocol is None:
        return None
    topics: set[str] = set()
    try:
        for member in value.members:
            topics.update(subscribed_topics(member.subscription))
    except SubscriptionError:
        return None
    return topics


def expire_group(value: GroupMetadataValue | None,
                 offsets: Iterable[tuple[str, int, CommitTimes]],
                 now_ms: int, retention_ms: int) -> ExpiryDecision:
    """Which of a group's live offsets expire at ``now_ms``, and whether the group goes.

    ``value`` is the group's latest GroupMetadataValue, or None for a group that
    exists only through its offsets.
    """
    protocol_type = value.protocol_type if value is not None and value.protocol_type else None
    state = group_state(value)
    topics = subscribed(value)
    uses_consumer = protocol_type == CONSUMER_PROTOCOL_TYPE
    if protocol_type is not None:
        if state == "Empty":
            assert value is not None  # protocol_type came from it
            state_ts = value.current_state_timestamp
            base = (lambda o: state_ts) if state_ts != -1 else (lambda o: o.commit_timestamp)
            reason = "empty_group"
        elif uses_consumer and topics is not None:
            base, reason = (lambda o: o.commit_timestamp), "unsubscribed_topic"
        else:
            return ExpiryDecision((), False)
    else:
        base, reason = (lambda o: o.commit_timestamp), "simple_group"

    expired, all_expired = _expired(
        offsets, lambda topic: (topic in topics) if topics is not None else uses_consumer, base, reason,
        now_ms, retention_ms)
    return ExpiryDecision(tuple(expired), all_expired and state == "Empty")


def _expired(offsets: Iterable[tuple[str, int, CommitTimes]], is_subscribed: Callable[[str], bool],
             base: Callable[[CommitTimes], int], reason: str, now_ms: int, retention_ms: int
             ) -> tuple[list[tuple[str, int, str]], bool]:
    """OffsetMetadataManager.cleanupExpiredOffsets: (the expired offsets, whether all expired)."""
    expired = []
    all_expired = True
    for topic, partition, offset in offsets:
        if is_subscribed(topic):
            all_expired = False
            continue
        if is_offset_expired(offset, base(offset), now_ms, retention_ms):
            expired.append((topic, partition, "expire_timestamp" if offset.expire_timestamp != -1 else reason))
            continue
        all_expired = False
    return expired, all_expired


def is_offset_expired(offset: CommitTimes, base_ms: int, now_ms: int, retention_ms: int) -> bool:
    """OffsetExpirationConditionImpl.isOffsetExpired: an explicit expire timestamp (OffsetCommitValue v1) wins,
    else `retention_ms` after `base_ms` (the commit, or an Empty group's state change). Classic and consumer
    groups, live (coordinator/groups/) and in the Spark expire job alike."""
    if offset.expire_timestamp != -1:
        return now_ms >= offset.expire_timestamp
    return now_ms - base_ms >= retention_ms


def expire_consumer_group(subscribed: set[str], offsets: Iterable[tuple[str, int, CommitTimes]],
                          now_ms: int, retention_ms: int) -> ExpiryDecision:
    """Which of a KIP-848 consumer group's offsets expire (see the module docstring); the group
    itself is never deleted here."""
    expired, _ = _expired(offsets, subscribed.__contains__, lambda o: o.commit_timestamp, "unsubscribed_topic",
                          now_ms, retention_ms)
    return ExpiryDecision(tuple(expired), False)
