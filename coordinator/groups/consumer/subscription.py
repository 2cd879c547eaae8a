"""Which topic ids a member subscribes to (Kafka's TopicIds over the member's names and its resolved regex).

Both the target assignment (the assignor's MemberSubscription) and the reconciliation (Kafka 4.1 drops
partitions of topics the member no longer subscribes to) need this. A regex subscription is given as
already resolved: `resolved_regexes` maps the regex string to the topic names it matched (the group's
ResolvedRegularExpression records). A regex not in that map is unresolved and, as in Kafka, matches
nothing. Names of topics that do not exist are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from coordinator.groups.consumer.model import ConsumerGroupMember, TopicId


def subscribed_topic_names(
    member: ConsumerGroupMember, resolved_regexes: Mapping[str, Set[str]]
) -> Set[str]:
    """The topic names of the member's subscription: its names, plus what its regex resolved to."""
    names: Set[str] = member.subscribed_topic_names
    regex = member.subscribed_topic_regex
    if regex:
        resolved = resolved_regexes.get(regex)
        if resolved is not None:
            names = resolved if not names else names | resolved
    return names


def subscribed_topic_ids(
    member: ConsumerGroupMember,
    topic_ids_by_name: Mapping[str, TopicId],
    resolved_regexes: Mapping[str, Set[str]],
) -> frozenset[TopicId]:
    """The ids of the existing topics the member subscribes to."""
    names = subscribed_topic_names(member, resolved_regexes)
    return frozenset(tid for name in names if (tid := topic_ids_by_name.get(name)) is not None)
