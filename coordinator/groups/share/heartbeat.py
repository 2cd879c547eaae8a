"""ShareGroupHeartbeat as records + an answer (Kafka 4.2's GroupMetadataManager.shareGroupHeartbeat), pure.

A heartbeat reads the group and returns the records to write; the group changes when they are replayed
(`apply`), live and on load alike. Steps, as Kafka's:

1. checks: group id and member id not empty, epoch >= -1, the first heartbeat (epoch 0) names its topics:
   INVALID_REQUEST; epoch -1 is a leave;
2. the member: new at epoch 0 (GROUP_MAX_SIZE_REACHED past group.share.max.size; a known member id at
   epoch 0 rejoins), else it must exist (UNKNOWN_MEMBER_ID) at its epoch or the one before
   (FENCED_MEMBER_EPOCH);
3. its subscription (ShareGroupMemberMetadata) when it changed; the group epoch is bumped
   (ShareGroupMetadata) when a member joined or changed its topics, or the subscribed topics' metadata hash
   changed;
4. share state: subscribed partitions with no share state yet become "initializing"
   (ShareGroupStatePartitionMetadata) and are returned for the runtime to InitializeShareGroupState; only
   initialized partitions are assigned; `initialized` moves them over once that is durable (and bumps the
   epoch so the next heartbeat assigns them);
5. a new target assignment (SimpleAssignor) when the group epoch passed the assignment epoch
   (ShareGroupTargetAssignmentMember for each changed member, then ShareGroupTargetAssignmentMetadata);
6. the member takes its target at once (share members own nothing exclusively):
   ShareGroupCurrentMemberAssignment with member epoch = assignment epoch.

The session timeout is not a record: the result's `session_deadline_ms` is for the runtime's timer, and
`expire(group, member, ...)` fences a member whose session ran out (the leave's records).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kio.schema.errors import ErrorCode

from coordinator.groups.metadata_hash import subscribed_hash
from storage.share_group_records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    TopicPartitionsInfo,
)

from .assignor import assign
from .config_settings import ShareGroupSettings
from .model import Assignment, Record, ShareGroup, ShareGroupMember, TopicId, to_topic_partitions

JOIN_EPOCH, LEAVE_EPOCH = 0, -1
Topics = Mapping[str, tuple[TopicId, int]]  # the metadata image: topic name -> (topic id, partition count)


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class HeartbeatResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    records: list[Record] = field(default_factory=list)
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # sent when it changed or the member joined
    to_initialize: dict[TopicId, frozenset[int]] = field(default_factory=dict)  # for InitializeShareGroupState
    session_deadline_ms: float | None = None


def _fail(error: ErrorCode, message: str) -> HeartbeatResult:
    return HeartbeatResult(error, message)


def metadata_hash(names: set[str], topics: Topics) -> int:
    """ShareGroupMetadataValue.MetadataHash of the subscribed topics: Kafka's group hash
    (coordinator/groups/metadata_hash.py), so a group loaded from a Kafka-written log keeps its epoch."""
    return subscribed_hash(names, topics)


def check_request(request: HeartbeatRequest) -> HeartbeatResult | None:
    if not request.group_id:
        return _fail(ErrorCode.invalid_request, "GroupId can't be empty.")
    if not request.member_id:
        return _fail(ErrorCode.invalid_request, "MemberId can't be empty.")
    if request.member_epoch < LEAVE_EPOCH:
        return _fail(ErrorCode.invalid_request, f"MemberEpoch is invalid: {request.member_epoch}")
    if request.member_epoch == JOIN_EPOCH and not request.subscribed_topic_names:
        return _fail(ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request.")
    return None


def heartbeat(group: ShareGroup | None, request: HeartbeatRequest, topics: Topics, settings: ShareGroupSettings,
              now_ms: float) -> HeartbeatResult:
    """The records and the answer of one ShareGroupHeartbeat (the group is not changed: replay the records)."""
    refused = check_request(request)
    if refused is not None:
        return refused
    if request.member_epoch == LEAVE_EPOCH:
        return leave(group, request.member_id, topics, settings)
    if group is None:
        if request.member_epoch != JOIN_EPOCH:
            return _fail(ErrorCode.unknown_member_id, f"Member {request.member_id} is not a member of the group.")
        group = ShareGroup(request.group_id)
    member = group.members.get(request.member_id)
    if member is None:
        if request.member_epoch != JOIN_EPOCH:
            return _fail(ErrorCode.unknown_member_id, f"Member {request.member_id} is not a member of the group.")
        if len(group.members) >= settings.max_size:
            return _fail(ErrorCode.group_max_size_reached,
                         f"The share group has reached its maximum capacity of {settings.max_size} members.")
        member = ShareGroupMember(request.member_id)
    elif request.member_epoch not in (JOIN_EPOCH, member.member_epoch, member.previous_member_epoch):
        return _fail(ErrorCode.fenced_member_epoch,
                     f"The share group member has a smaller or larger member epoch ({request.member_epoch}) than "
                     f"the one known by the group coordinator ({member.member_epoch}).")
    return _step(group, member, request, topics, settings, now_ms)


def _step(group: ShareGroup, member: ShareGroupMember, request: HeartbeatRequest, topics: Topics,
          settings: ShareGroupSettings, now_ms: float) -> HeartbeatResult:
    records: list[Record] = []
    joining = request.member_epoch == JOIN_EPOCH
    updated = replace(
        member,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        subscribed_topic_names=(tuple(sorted(set(request.subscribed_topic_names)))
                                if request.subscribed_topic_names is not None else member.subscribed_topic_names),
        client_id=request.client_id, client_host=request.client_host)
    new_member = member.member_id not in group.members
    if new_member or updated != member:
        records.append((ShareGroupMemberMetadataKey(group.group_id, member.member_id), ShareGroupMemberMetadataValue(
            updated.rack_id, updated.client_id, updated.client_host, updated.subscribed_topic_names)))
    members = {**group.members, member.member_id: updated}
    subscribed = {name for m in members.values() for name in m.subscribed_topic_names}
    new_hash = metadata_hash(subscribed, topics)
    group_epoch = group.group_epoch
    if new_member or updated.subscribed_topic_names != member.subscribed_topic_names or new_hash != group.metadata_hash:
        group_epoch += 1
        records.append((ShareGroupMetadataKey(group.group_id), ShareGroupMetadataValue(group_epoch, new_hash)))
    to_initialize = _initializing(group, subscribed, topics, now_ms, settings.initialize_retry_interval_ms, records)
    target, assignment_epoch = group.target, group.assignment_epoch
    if group_epoch > group.assignment_epoch:
        target = _new_target(group, members, topics, group_epoch, records)
        assignment_epoch = group_epoch
    assigned = target.get(member.member_id, {})
    result = HeartbeatResult(records=records, heartbeat_interval_ms=settings.heartbeat_interval_ms,
                             to_initialize=to_initialize, session_deadline_ms=now_ms + settings.session_timeout_ms)
    if new_member or updated.member_epoch != assignment_epoch or updated.assigned != assigned:
        previous = updated.member_epoch if updated.member_epoch != assignment_epoch else updated.previous_member_epoch
        records.append((ShareGroupCurrentMemberAssignmentKey(group.group_id, member.member_id),
                        ShareGroupCurrentMemberAssignmentValue(assignment_epoch, previous, 0,
                                                               to_topic_partitions(assigned))))
    result.member_epoch = assignment_epoch
    if joining or updated.assigned != assigned:
        result.assignment = dict(assigned)
    return result


def _initializing(group: ShareGroup, subscribed: set[str], topics: Topics, now_ms: float, retry_ms: int,
                  records: list[Record]) -> dict[TopicId, frozenset[int]]:
    """Subscribed partitions without share state join the initializing ones (a record when any do); those
    initializing for `retry_ms` or longer (their InitializeShareGroupState never answered, e.g. its share
    coordinator had no owner for longer than the persister's retries) are asked for again, as Kafka's
    group.share.initialize.retry.interval.ms does."""
    state = group.partition_state
    known: dict[TopicId, set[int]] = {}
    for info in state.initialized_topics:
        known.setdefault(info.topic_id, set()).update(info.partitions)
    for info in state.initializing_topics:
        if info.create_timestamp + retry_ms > now_ms:
            known.setdefault(info.topic_id, set()).update(info.partitions)
    fresh: dict[TopicId, frozenset[int]] = {}
    names: dict[TopicId, str] = {}
    for name in sorted(subscribed):
        if name not in topics:
            continue
        topic_id, count = topics[name]
        missing = frozenset(range(count)) - known.get(topic_id, set())
        if missing:
            fresh[topic_id], names[topic_id] = missing, name
    if not fresh:
        return {}
    initializing = {info.topic_id: info for info in state.initializing_topics}
    for topic_id, partitions in fresh.items():
        old = initializing.get(topic_id)
        merged = tuple(sorted(set(old.partitions if old else ()) | partitions))
        initializing[topic_id] = TopicPartitionsInfo(topic_id, names[topic_id], merged, int(now_ms))
    records.append((ShareGroupStatePartitionMetadataKey(group.group_id), replace(
        state, initializing_topics=tuple(sorted(initializing.values(), key=lambda i: i.topic_id.bytes)))))
    return fresh


def _new_target(group: ShareGroup, members: Mapping[str, ShareGroupMember], topics: Topics, epoch: int,
                records: list[Record]) -> dict[str, Assignment]:
    subscriptions = {m.member_id: frozenset(topics[n][0] for n in m.subscribed_topic_names if n in topics)
                     for m in members.values()}
    counts = {topic_id: count for topic_id, count in topics.values()}
    assignable = {t: frozenset(p for p in ps if p < counts.get(t, 0)) for t, ps in group.initialized().items()}
    target = assign(subscriptions, assignable, group.target)
    for member_id in sorted(target):
        if target[member_id] != group.target.get(member_id):
            records.append((ShareGroupTargetAssignmentMemberKey(group.group_id, member_id),
                            ShareGroupTargetAssignmentMemberValue(to_topic_partitions(target[member_id]))))
    records.append((ShareGroupTargetAssignmentMetadataKey(group.group_id),
                    ShareGroupTargetAssignmentMetadataValue(epoch)))
    return target


def leave(group: ShareGroup | None, member_id: str, topics: Topics, settings: ShareGroupSettings) -> HeartbeatResult:
    """A member leaves (epoch -1) or is fenced: its records are tombstoned and the group epoch bumped."""
    if group is None or member_id not in group.members:
        return _fail(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of the group.")
    g = group.group_id
    records: list[Record] = [(ShareGroupCurrentMemberAssignmentKey(g, member_id), None),
                             (ShareGroupTargetAssignmentMemberKey(g, member_id), None),
                             (ShareGroupMemberMetadataKey(g, member_id), None)]
    rest = {name for m in group.members.values() if m.member_id != member_id for name in m.subscribed_topic_names}
    records.append((ShareGroupMetadataKey(g), ShareGroupMetadataValue(group.group_epoch + 1,
                                                                      metadata_hash(rest, topics))))
    return HeartbeatResult(records=records, member_epoch=LEAVE_EPOCH,
                           heartbeat_interval_ms=settings.heartbeat_interval_ms)


def expire(group: ShareGroup, member_id: str, now_ms: float, topics: Topics,
           settings: ShareGroupSettings) -> list[Record]:
    """The session of `member_id` ran out (its deadline is not later than `now_ms`): the leave's records."""
    deadline = group.session_deadlines.get(member_id)
    if deadline is None or deadline > now_ms or member_id not in group.members:
        return []
    return leave(group, member_id, topics, settings).records


def initialized(group: ShareGroup, done: Mapping[TopicId, frozenset[int]], topics: Topics) -> list[Record]:
    """InitializeShareGroupState succeeded for `done`: they move from initializing to initialized and the
    group epoch is bumped so that the next heartbeat assigns them."""
    state = group.partition_state
    names = {topic_id: name for name, (topic_id, _count) in topics.items()}
    init = {i.topic_id: set(i.partitions) for i in state.initialized_topics}
    pending = {i.topic_id: i for i in state.initializing_topics}
    for topic_id, partitions in done.items():
        init.setdefault(topic_id, set()).update(partitions)
        if topic_id in pending:
            left = tuple(p for p in pending[topic_id].partitions if p not in partitions)
            pending[topic_id] = replace(pending[topic_id], partitions=left)
    old_names = {i.topic_id: i.topic_name for i in (*state.initialized_topics, *state.initializing_topics)}
    value = ShareGroupStatePartitionMetadataValue(
        tuple(sorted((i for i in pending.values() if i.partitions), key=lambda i: i.topic_id.bytes)),
        tuple(TopicPartitionsInfo(t, names.get(t, old_names.get(t, "")), tuple(sorted(ps)), 0)
              for t, ps in sorted(init.items(), key=lambda item: item[0].bytes)),
        state.deleting_topics)
    g = group.group_id
    return [(ShareGroupStatePartitionMetadataKey(g), value),
            (ShareGroupMetadataKey(g), ShareGroupMetadataValue(group.group_epoch + 1, group.metadata_hash))]


def apply(groups: dict[str, ShareGroup], group_id: str, result: HeartbeatResult | list[Record],
          member_id: str | None = None) -> ShareGroup:
    """Replay a step's records into `groups` (what the runtime does once they are written) and record the
    member's session deadline."""
    records = result.records if isinstance(result, HeartbeatResult) else result
    group = groups.setdefault(group_id, ShareGroup(group_id))
    for key, value in records:
        group.replay(key, value)
    if isinstance(result, HeartbeatResult) and member_id is not None:
        if result.session_deadline_ms is not None and member_id in group.members:
            group.session_deadlines[member_id] = result.session_deadline_ms
    return group


def member_uuid() -> str:
    """A member id as Kafka's clients make one (Uuid.randomUuid().toString()): for tests and tools."""
    from storage.record_schema import uuid_string

    return uuid_string(uuid.uuid4())
