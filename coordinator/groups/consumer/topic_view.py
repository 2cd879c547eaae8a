"""Which topics a consumer group's members subscribe to, resolved against the topic catalog.

Kafka's ModernGroup.computeSubscriptionMetadata: the group keeps, for every topic name some member subscribes to
(by name or through its regular expression) and that exists, the topic's id and partition count
(ConsumerGroupPartitionMetadata). When that changes -- a member subscribes to something else, a topic appears,
grows or is deleted -- the group epoch is bumped and a new target assignment computed. The catalog's `version`
moves on every topic change, so a group notices by comparing it with the version it last resolved against.

Regular expressions are RE2J's in Kafka: here RE2's (google-re2), the same syntax and a linear-time match, so a
hostile pattern cannot stall the server as a backtracking engine would. A pattern matches a topic name whole;
internal topics never match; with an authorizer only topics the member's principal may DESCRIBE (regexes.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Set
from functools import lru_cache
from typing import Any, Protocol

import re2
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


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is the client's error, answered; not a line on stderr
CACHED_REGEX_LENGTH = 1024  # compiled patterns up to this long are kept (a few hundred): members repeat them


def compile_regex(pattern: str) -> Any:
    """The member's SubscribedTopicRegex, or INVALID_REGULAR_EXPRESSION (Kafka checks it on the heartbeat). RE2
    bounds the memory of a compiled pattern (a huge one is an error); only short ones are cached."""
    return _compile_cached(pattern) if len(pattern) <= CACHED_REGEX_LENGTH else _compile(pattern)


def _compile(pattern: str) -> Any:
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        raise KafkaError(f"SubscribedTopicRegex `{pattern[:200]}` is not a valid regular expression: {exc}.",
                         ErrorCode.invalid_regular_expression) from None


_compile_cached = lru_cache(maxsize=256)(_compile)


def member_topic_names(member: ConsumerGroupMember, topics: TopicView, regexes: Mapping[str, Set[str]]) -> set[str]:
    """Every existing topic the member subscribes to, by name or through its regex (`regexes`: what each regex
    resolves to, groups/consumer/regexes.py)."""
    names = {n for n in member.subscribed_topic_names if topics.topic(n) is not None}
    if member.subscribed_topic_regex:
        names.update(n for n in regexes.get(member.subscribed_topic_regex, ()) if topics.topic(n) is not None)
    return names


def subscription_metadata(members: Iterable[ConsumerGroupMember], topics: TopicView,
                          regexes: Mapping[str, Set[str]]) -> dict[str, TopicMetadata]:
    """Topic name -> metadata of every existing topic some member subscribes to."""
    out: dict[str, TopicMetadata] = {}
    for member in members:
        for name in member_topic_names(member, topics, regexes):
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
