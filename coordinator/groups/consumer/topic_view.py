"""Which topics a consumer group's members subscribe to, resolved against the topic catalog.

Kafka's ModernGroup.computeSubscriptionMetadata: the group keeps, for every topic name some member subscribes to
(by name or through its regular expression) and that exists, the topic's id and partition count
(ConsumerGroupPartitionMetadata). When that changes -- a member subscribes to something else, a topic appears,
grows or is deleted -- the group epoch is bumped and a new target assignment computed. The catalog's `version`
moves on every topic change, so a group notices by comparing it with the version it last resolved against.

Regular expressions are RE2J's in Kafka; Python's `re` agrees on the common syntax (a full match of the topic
name); internal topics never match.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Protocol

from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.groups.consumer.model import ConsumerGroupMember, TopicMetadata


class TopicView(Protocol):
    """What the consumer groups know of the topic catalog."""

    @property
    def version(self) -> int: ...

    def topic(self, name: str) -> TopicMetadata | None: ...

    def name_of(self, topic_id: uuid.UUID) -> str | None: ...

    def names(self) -> Iterable[str]: ...


@lru_cache(maxsize=256)
def compile_regex(pattern: str) -> re.Pattern[str]:
    """The member's SubscribedTopicRegex, or INVALID_REGULAR_EXPRESSION (Kafka checks it on the heartbeat)."""
    try:
        return re.compile(pattern)
    except (re.error, RecursionError) as exc:
        raise KafkaError(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {exc}.",
                         ErrorCode.invalid_regular_expression) from None


def member_topic_names(member: ConsumerGroupMember, topics: TopicView) -> set[str]:
    """Every existing topic the member subscribes to, by name or regex."""
    names = {n for n in member.subscribed_topic_names if topics.topic(n) is not None}
    if member.subscribed_topic_regex:
        pattern = compile_regex(member.subscribed_topic_regex)
        names.update(n for n in topics.names() if not n.startswith("__") and pattern.fullmatch(n))
    return names


def resolve_regexes(members: Iterable[ConsumerGroupMember], topics: TopicView) -> dict[str, frozenset[str]]:
    """Each regex some member subscribes with -> the existing topic names it matches."""
    out: dict[str, frozenset[str]] = {}
    for member in members:
        regex = member.subscribed_topic_regex
        if regex and regex not in out:
            pattern = compile_regex(regex)
            out[regex] = frozenset(n for n in topics.names() if not n.startswith("__") and pattern.fullmatch(n))
    return out


def subscription_metadata(members: Iterable[ConsumerGroupMember], topics: TopicView) -> dict[str, TopicMetadata]:
    """Topic name -> metadata of every existing topic some member subscribes to."""
    out: dict[str, TopicMetadata] = {}
    for member in members:
        for name in member_topic_names(member, topics):
            if name not in out:
                found = topics.topic(name)
                if found is not None:
                    out[name] = found
    return out


def members_with(members: Mapping[str, ConsumerGroupMember], old: ConsumerGroupMember | None,
                 new: ConsumerGroupMember | None) -> list[ConsumerGroupMember]:
    """The group's members with `old` replaced by `new` (either may be None), for what-if computations."""
    out = [m for m in members.values() if old is None or m.member_id != old.member_id]
    if new is not None:
        out = [m for m in out if m.member_id != new.member_id]
        out.append(new)
    return out


class _NoTopics:
    """A catalog without topics (unit tests of the classic paths; a shard not given the catalog)."""

    version = 0

    def topic(self, name: str) -> TopicMetadata | None:
        return None

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return None

    def names(self) -> Iterable[str]:
        return ()


NO_TOPICS: TopicView = _NoTopics()
