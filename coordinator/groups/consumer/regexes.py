"""The topics each regular expression of a consumer group's members resolves to (Kafka's resolved regular
expressions of a ConsumerGroup, refreshed by GroupMetadataManager.refreshRegularExpressions).

A regex matches the names of existing topics whole (topic_view.compile_regex: RE2), never an internal topic's.
With an authorizer, only the topics the principal may DESCRIBE count (Kafka 4's
filterTopicDescribeAuthorizedTopics): a member must neither be assigned a topic it may not see nor learn its
name from its assignment. As in Kafka, the resolution is the group's, made with the permissions of the member
whose heartbeat refreshed it, and kept until the next refresh: when a regex is new to the group, or the topic
catalog changed since (Kafka: the metadata image has new topics). What runs without a request -- a session or
rebalance timeout fencing a member, a classic-protocol member's JoinGroup -- uses the kept resolution; a regex
not resolved since the partition loaded counts only the topics already in the group's subscription metadata
(persisted, so resolved under some member's permissions before).

Kafka persists the resolution (ConsumerGroupRegularExpression records, key type 16); here it is kept in memory
and the first heartbeat after a load resolves again -- with the same permissions, the same topics, so the
subscription metadata and the group epoch do not move. Without an authorizer the resolution depends on the
catalog alone and is computed at each use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.model import ConsumerGroupMember
from coordinator.groups.consumer.topic_view import TopicView, compile_regex

Describable = Callable[[str], bool]  # may the requesting principal DESCRIBE this topic
Resolved = dict[str, frozenset[str]]  # regex -> the topic names it resolves to


def regex_matches(regex: str, topics: TopicView) -> frozenset[str]:
    """The existing, non-internal topic names `regex` matches whole."""
    pattern = compile_regex(regex)
    return frozenset(n for n in topics.names() if not n.startswith("__") and pattern.fullmatch(n))


def regexes_of(members: Iterable[ConsumerGroupMember]) -> set[str]:
    return {m.subscribed_topic_regex for m in members if m.subscribed_topic_regex}


class GroupRegexes:
    """The kept resolutions, per group (used only with an authorizer: `authorized`)."""

    __slots__ = ("authorized", "kept")

    def __init__(self, authorized: bool) -> None:
        self.authorized = authorized
        #: group -> regex -> (its topics, the catalog version it was resolved at)
        self.kept: dict[str, dict[str, tuple[frozenset[str], int]]] = {}

    def resolve(self, group: ConsumerGroup, members: Iterable[ConsumerGroupMember], topics: TopicView,
                describable: Describable | None = None) -> Resolved:
        """The topics of each regex `members` subscribe with. `describable`: the permissions of the member whose
        heartbeat this is (None: no request -- the kept resolution)."""
        regexes = regexes_of(members)
        if not self.authorized:
            return {regex: regex_matches(regex, topics) for regex in regexes}
        if not regexes:
            self.kept.pop(group.group_id, None)
            return {}
        kept = self.kept.setdefault(group.group_id, {})
        version = topics.version
        if describable is not None and any(r not in kept or kept[r][1] != version for r in regexes):
            for regex in regexes:  # refreshRegularExpressions: all of the group's, with this member's permissions
                kept[regex] = (frozenset(filter(describable, regex_matches(regex, topics))), version)
        for regex in [r for r in kept if r not in regexes]:
            del kept[regex]
        subscribed = frozenset(group.subscription_metadata)
        return {regex: kept[regex][0] if regex in kept else regex_matches(regex, topics) & subscribed
                for regex in regexes}

    def forget(self) -> None:
        """The partition unloads."""
        self.kept.clear()
