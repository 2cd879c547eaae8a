"""Kafka's UniformAssignor ("uniform", the default server-side assignor): balanced and sticky. It picks the
homogeneous builder when every member subscribes to the same topics and the heterogeneous one otherwise.

Kafka decides homogeneity from the subscribed topic names (a topic that does not exist counts); the
assignor interface here carries only the ids of existing topics, so two members that differ only in
subscriptions to missing topics take the homogeneous path. Kafka 4.0 and 4.1 take no racks into account
here; neither does this.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.groups.consumer.assignor_support import is_homogeneous
from coordinator.groups.consumer.model import Assignment, MemberSubscription, TopicId, TopicMetadata
from coordinator.groups.consumer.uniform_heterogeneous import assign_heterogeneous
from coordinator.groups.consumer.uniform_homogeneous import assign_homogeneous


class UniformAssignor:
    name = "uniform"

    def assign(self, members: Mapping[str, MemberSubscription],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        if not members:
            return {}
        if is_homogeneous(members.values()):
            return assign_homogeneous(members, topics)
        return assign_heterogeneous(members, topics)
