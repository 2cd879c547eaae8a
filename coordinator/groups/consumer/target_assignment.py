"""The target assignment of a consumer group (Kafka's TargetAssignmentBuilder, 4.0/4.1 `build`): every
member's subscription and current target go to the assignor; what comes back is the new target, and the
members whose target changed are the ones that get a ConsumerGroupTargetAssignmentMember record, followed
by one ConsumerGroupTargetAssignmentMetadata(epoch) record. Records stay abstract here: the result lists
(member id, assignment) changes and the epoch; the group turns them into record values.

Static members: when an updated member carries an instance id that `static_members` maps to another
member id, that member is being replaced (GroupMetadataManager.updateTargetAssignment): the previous
member leaves the assignment and the new one starts from the previous member's target, so a sticky
assignor gives it the same partitions. No record is listed for the departed member id; the caller
writes its tombstones, as Kafka's static-member replacement does.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from coordinator.groups.consumer.model import (
    EMPTY_ASSIGNMENT,
    Assignment,
    ConsumerGroupMember,
    MemberSubscription,
    PartitionAssignor,
    TopicId,
    TopicMetadata,
)
from coordinator.groups.consumer.subscription import subscribed_topic_ids


@dataclass(frozen=True, slots=True)
class TargetAssignmentResult:
    """`assignments`: the new target of every member (member id -> assignment, {} for none).
    `changed`: (member id, new assignment) for the members whose target changed or who had none, in
    member order: one ConsumerGroupTargetAssignmentMember record each, then the metadata record (`epoch`)."""

    group_id: str
    epoch: int
    assignments: dict[str, Assignment]
    changed: list[tuple[str, Assignment]]


def build_target_assignment(
    group_id: str,
    group_epoch: int,
    assignor: PartitionAssignor,
    members: Mapping[str, ConsumerGroupMember],
    target_assignments: Mapping[str, Assignment],
    topics: Mapping[str, TopicMetadata],
    static_members: Mapping[str, str],
    updates: Mapping[str, ConsumerGroupMember | None] | None = None,
    *,
    resolved_regexes: Mapping[str, Set[str]] | None = None,
) -> TargetAssignmentResult:
    """Compute the group's target assignment for `group_epoch`.

    `members`: the group's members as they are; `updates`: member id -> the member as it will be (added
    or changed, not yet in `members`), or None for a member leaving. `target_assignments`: the current
    target by member id. `topics`: the existing topics by name. `static_members`: instance id -> member id.
    `resolved_regexes`: regex -> the topic names it resolved to (an unresolved regex matches nothing).
    """
    regexes = resolved_regexes or {}
    topic_ids = {name: meta.topic_id for name, meta in topics.items()}
    specs: dict[str, MemberSubscription] = {}
    for member_id, member in members.items():
        current = target_assignments.get(member_id, EMPTY_ASSIGNMENT)
        specs[member_id] = _spec(member_id, member, current, topic_ids, regexes)
    for member_id, update in (updates or {}).items():
        if update is None:
            specs.pop(member_id, None)
            continue
        current = target_assignments.get(member_id, EMPTY_ASSIGNMENT)
        previous_id = static_members.get(update.instance_id) if update.instance_id is not None else None
        if previous_id is not None and previous_id != member_id:
            current = target_assignments.get(previous_id, EMPTY_ASSIGNMENT)
            specs.pop(previous_id, None)
        specs[member_id] = _spec(member_id, update, current, topic_ids, regexes)

    by_id = {meta.topic_id: meta for meta in topics.values()}
    computed = assignor.assign(specs, by_id)

    assignments: dict[str, Assignment] = {}
    changed: list[tuple[str, Assignment]] = []
    for member_id in specs:
        new = _normalised(computed.get(member_id, EMPTY_ASSIGNMENT))
        assignments[member_id] = new
        old = target_assignments.get(member_id)
        if old is None or _normalised(old) != new:
            changed.append((member_id, new))
    return TargetAssignmentResult(group_id, group_epoch, assignments, changed)


def _spec(member_id: str, member: ConsumerGroupMember, current: Assignment, topic_ids: Mapping[str, TopicId],
          regexes: Mapping[str, Set[str]]) -> MemberSubscription:
    return MemberSubscription(
        member_id=member_id,
        subscribed_topic_ids=subscribed_topic_ids(member, topic_ids, regexes),
        assignment=current,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
    )


def _normalised(assignment: Assignment) -> dict[TopicId, frozenset[int]]:
    """frozensets, and no topic without partitions (as Kafka's records hold them)."""
    return {t: ps if isinstance(ps, frozenset) else frozenset(ps) for t, ps in assignment.items() if ps}
