"""ShareGroupDescribe's data of a share group (Kafka's ShareGroup.asDescribedGroup): what the handler turns
into a DescribedGroup; the assignor is Kafka's SimpleAssignor ("simple")."""

from __future__ import annotations

from dataclasses import dataclass

from .model import Assignment, ShareGroup

ASSIGNOR_NAME = "simple"


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: Assignment


@dataclass(frozen=True, slots=True)
class DescribedShareGroup:
    group_id: str
    group_state: str  # "Empty", "Stable"
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[DescribedMember, ...]


def describe(group: ShareGroup) -> DescribedShareGroup:
    members = tuple(DescribedMember(m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                                    m.subscribed_topic_names, m.assigned)
                    for m in sorted(group.members.values(), key=lambda m: m.member_id))
    return DescribedShareGroup(group.group_id, group.state().value, group.group_epoch, group.assignment_epoch,
                               ASSIGNOR_NAME, members)
