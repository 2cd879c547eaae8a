"""Committed offsets of one shard, and OffsetCommit / OffsetFetch / OffsetDelete logic.

Follows Kafka's OffsetMetadataManager (commitOffset, fetchOffsets, fetchAllOffsets,
deleteOffsets, deleteAllOffsets, replay) and ClassicGroup.validateOffsetCommit /
validateOffsetFetch / validateOffsetDelete / isSubscribedToTopic. The functions here
decide and return records plus per-partition answers; they never change the store
themselves: `Shard.write` appends the records and applies them through
`Shard.replay_all` -> `OffsetStore.apply_all`, the path loading uses too.

Reads see durable state. While a commit is appended but not yet durable its key is
*pending*: `OffsetStore.durable_view` gives the last durable value, so a plain OffsetFetch
answers what survived a crash (Kafka reads at the last committed offset), one with
require_stable answers UNSTABLE_OFFSET_COMMIT, and a failed write puts the durable value
back (Kafka reverts its timeline to the last committed offset). A key with a pending
transactional offset (TxnOffsetCommit, rules/pending_offsets.py) answers
UNSTABLE_OFFSET_COMMIT to require_stable too, until its transaction's marker.

Hot path: a commit builds one OffsetValue and one OffsetCommitRecord tuple per
partition; its answer is the list of partition indexes (codes only when one fails).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kio.schema.errors import ErrorCode

from coordinator.groups.classic_group import ClassicGroup, GroupState
from coordinator.groups.consumer import offset_rules as consumer_rules
from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.offsets.store import OffsetStore, durable_value
from coordinator.records import log_codec
from coordinator.records.types import OffsetCommitRecord, OffsetValue
from rules.consumer_protocol import SubscriptionError, subscribed_topics as decode_topics

if TYPE_CHECKING:
    from coordinator.groups.membership import Membership

S = GroupState
E = ErrorCode
CONSUMER_PROTOCOL_TYPE = "consumer"
DEFAULT_RETENTION = -1  # OffsetCommitRequest.DEFAULT_RETENTION_TIME
NO_OFFSET = -1
GROUP_ID_NOT_FOUND_FROM = 9  # OffsetCommit v9+: GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


class Shard(Protocol):
    """What the offsets logic reads of a shard (runtime.shard.Shard), without importing it."""

    groups: dict[str, ClassicGroup]
    consumer_groups: dict[str, ConsumerGroup]
    offsets: OffsetStore
    membership: Membership



# --- helpers on groups ------------------------------------------------------------------

def java_length(text: str) -> int:
    """Java String.length(): UTF-16 code units (a character above U+FFFF counts 2)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def subscribed_topics(group: ClassicGroup) -> set[str] | None:
    """ClassicGroup.computeSubscribedTopics: None when Kafka would not know them."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not group.members:
        return set()
    if group.protocol_name is None:
        return None
    topics: set[str] = set()
    try:
        for member in group.members.values():
            topics.update(decode_topics(member.metadata(group.protocol_name)))
    except (SubscriptionError, ValueError):
        return None
    return topics


def is_subscribed(group: ClassicGroup, topic: str, topics: set[str] | None = None) -> bool:
    """ClassicGroup.isSubscribedToTopic: unknown topics mean "subscribed" for consumer groups."""
    if topics is None:
        topics = subscribed_topics(group)
    if topics is None:
        return group.protocol_type == CONSUMER_PROTOCOL_TYPE
    return topic in topics


# --- OffsetCommit ------------------------------------------------------------------------

def validate_commit(shard: Shard, group_id: str, member_id: str, instance_id: str | None,
                    generation: int, api_version: int) -> ErrorCode | None:
    """OffsetMetadataManager.validateOffsetCommit + ClassicGroup.validateOffsetCommit.

    A commit with generation < 0 for a group that does not exist is accepted: replaying
    its records creates the "simple" group (an Empty classic group without protocol type).
    """
    consumer = shard.consumer_groups.get(group_id)
    if consumer is not None:  # KIP-848: the generation is the member epoch
        return consumer_rules.commit_error(consumer, member_id, generation, api_version)
    group = shard.groups.get(group_id)
    if group is None:
        if generation < 0:
            return None
        return E.group_id_not_found if api_version >= GROUP_ID_NOT_FOUND_FROM else E.illegal_generation
    code = classic_commit_error(group, member_id, instance_id, generation)
    if code is not None or (generation < 0 and group.state is S.EMPTY):
        return code
    state = group.state
    if state is S.STABLE or state is S.PREPARING_REBALANCE:
        # the old protocol: a commit keeps the member's session alive
        member = group.members.get(member_id)
        if member is not None:
            shard.membership.touch_session(group, member)
    return None


def classic_commit_error(group: Any, member_id: str, instance_id: str | None, generation: int,
                         transactional: bool = False) -> ErrorCode | None:
    """ClassicGroup.validateOffsetCommit: a transactional commit (TxnOffsetCommit) without member id and
    generation is accepted in any state, and no state refuses it with REBALANCE_IN_PROGRESS."""
    state = group.state
    if state is S.DEAD:
        return E.coordinator_not_available
    if generation < 0 and state is S.EMPTY:
        return None
    if generation >= 0 or member_id or instance_id is not None:
        if instance_id is not None:
            existing = group.static_members.get(instance_id)
            if existing is None:
                return E.unknown_member_id
            if existing != member_id:
                return E.fenced_instance_id
        if member_id not in group.members:
            return E.unknown_member_id
        if generation != group.generation_id:
            return E.illegal_generation
    elif not transactional and state is not S.EMPTY:
        return E.unknown_member_id
    if not transactional and state is S.COMPLETING_REBALANCE:
        return E.rebalance_in_progress
    return None


def commit_records(group_id: str, topics: Any, now_ms: int, retention_ms: int, max_metadata: int,
                   with_epoch: bool) -> tuple[list, list, list | None]:
    """Records to write, their log tails and the answer of a valid commit.

    The answer is [(topic, partition indexes, codes)], codes None when every partition
    answers NONE (the common case: no tuple per partition), else the code of each index.
    The tails are log_codec.encode_tails(records), made in the same pass (the hot
    path: one loop over the partitions, not two), or None when a name or metadata cannot
    be encoded (the log's encoding then fails the write, as for any other write).

    `topics` are the request's topics (kio objects: name, partitions with partition_index,
    committed_offset, committed_metadata and, when `with_epoch`, committed_leader_epoch).
    """
    # an int64 on disk: Kafka's long addition would wrap; we clamp instead
    expire = -1 if retention_ms == DEFAULT_RETENTION else min(max(now_ms + retention_ms, _I64_MIN), _I64_MAX)
    records: list = []
    tails: list | None = []
    answer: list = []
    add = records.append
    # OffsetCommitRecord(...) / OffsetValue(...) without the NamedTuples' Python-level
    # __new__ (a third of the cost of a commit's records); fields in order
    new, Record, Value = tuple.__new__, OffsetCommitRecord, OffsetValue
    plain_tail = log_codec.plain_commit_tail
    ok, too_large = E.none, E.offset_metadata_too_large
    half = max_metadata // 2
    for topic in topics:
        name = topic.name
        indexes: list = []
        codes: list | None = None
        head = b""  # the key head, read only while tails is not None
        if tails is not None:
            try:
                head = log_codec.key_head(group_id, name)
            except ValueError:
                tails = None
        for p in topic.partitions:
            index = p.partition_index
            metadata = p.committed_metadata
            if metadata is None:
                metadata = ""
            elif len(metadata) > half and java_length(metadata) > max_metadata:
                if codes is None:
                    codes = [ok] * len(indexes)
                indexes.append(index)
                codes.append(too_large)
                continue
            offset, epoch = p.committed_offset, p.committed_leader_epoch if with_epoch else -1
            record = new(Record, (group_id, name, index, new(Value, (offset, metadata, now_ms, epoch, expire))))
            add(record)
            if tails is not None:
                if metadata or expire != -1:
                    try:
                        tails += log_codec.encode_tails([record])
                    except Exception:  # the log's encoding fails the write with the reason
                        tails = None
                else:
                    tails.append(plain_tail(head, index, offset, epoch, now_ms))
            indexes.append(index)
            if codes is not None:
                codes.append(ok)
        answer.append((name, indexes, codes))
    return records, answer, tails


def error_answer(topics: Any, code: ErrorCode) -> list:
    """Every partition of the request answered with one error (commit_records' form)."""
    out = []
    for t in topics:
        indexes = [p.partition_index for p in t.partitions]
        out.append((t.name, indexes, [code] * len(indexes)))
    return out


# --- OffsetFetch ---------------------------------------------------------------------------

FetchPartition = tuple[int, int, int, str, ErrorCode]  # partition, offset, leader epoch, metadata, code


def fetch(shard: Shard, group_id: str, topics: Any, require_stable: bool) -> list:
    """[(topic, [FetchPartition, ...])] for the requested partitions (`topics` as in the
    request: name + partition_indexes), or for every committed one when `topics` is None.

    A group that does not exist (or is Dead) has no offsets: -1 everywhere, no error
    (fetchOffsets' failAllPartitions), an empty list for "all topics".
    """
    store = shard.offsets
    group = shard.groups.get(group_id)
    missing = (group is None or group.state is S.DEAD) and group_id not in shard.consumer_groups
    if topics is None:
        return [] if missing else _fetch_all(store, group_id, require_stable)
    out = []
    view = store.durable_view(group_id) if store.inflight and not missing else {}
    txn = store.txn if require_stable and store.txn.has_open(group_id) else None
    for topic in topics:
        name = topic.name
        rows: list = []
        for index in topic.partition_indexes:
            if txn is not None and txn.has(group_id, name, index):  # a transaction's offset not ended yet
                rows.append((index, NO_OFFSET, -1, "", E.unstable_offset_commit))
                continue
            if missing:
                rows.append((index, NO_OFFSET, -1, "", E.none))
                continue
            if view and (name, index) in view:
                if require_stable:
                    rows.append((index, NO_OFFSET, -1, "", E.unstable_offset_commit))
                    continue
                value = durable_value(view[name, index])
            else:
                value = store.get(group_id, name, index)
            if value is None:
                rows.append((index, NO_OFFSET, -1, "", E.none))
            else:
                rows.append((index, value.offset, value.leader_epoch, value.metadata, E.none))
        out.append((name, rows))
    return out


def _fetch_all(store: OffsetStore, group_id: str, require_stable: bool) -> list:
    view = store.durable_view(group_id) if store.inflight else {}
    txn = store.txn if require_stable and store.txn.has_open(group_id) else None
    by_topic: dict[str, list] = {}
    value: OffsetValue | None
    for topic, partition, value in store.items(group_id):
        if txn is not None and txn.has(group_id, topic, partition):  # fetchAllOffsets: committed keys only
            by_topic.setdefault(topic, []).append((partition, NO_OFFSET, -1, "", E.unstable_offset_commit))
            continue
        if view and (topic, partition) in view:
            if require_stable:
                by_topic.setdefault(topic, []).append((partition, NO_OFFSET, -1, "", E.unstable_offset_commit))
                continue
            value = durable_value(view[topic, partition])
            if value is None:
                continue  # committed but not durable yet
        by_topic.setdefault(topic, []).append((partition, value.offset, value.leader_epoch, value.metadata, E.none))
    for (topic, partition), raw in view.items():
        # keys a pending tombstone removed from the store are still durable
        durable = durable_value(raw)
        if durable is not None and store.get(group_id, topic, partition) is None:
            row = ((partition, NO_OFFSET, -1, "", E.unstable_offset_commit) if require_stable
                   else (partition, durable.offset, durable.leader_epoch, durable.metadata, E.none))
            by_topic.setdefault(topic, []).append(row)
    return list(by_topic.items())


# --- OffsetDelete / DeleteGroups -----------------------------------------------------------

def delete_offsets(shard: Shard, group_id: str, topics: Any) -> tuple[ErrorCode, list, list]:
    """(group error, records, [(topic, [(partition, code)])]): deleteOffsets."""
    consumer = shard.consumer_groups.get(group_id)
    if consumer is not None:
        return _delete_consumer_offsets(shard, consumer, topics)
    group = shard.groups.get(group_id)
    if group is None or group.state is S.DEAD:
        return E.group_id_not_found, [], []
    if group.state in (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE) \
            and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return E.non_empty_group, [], []
    store = shard.offsets
    subscribed = subscribed_topics(group)
    records: list = []
    answer: list = []
    for topic in topics:
        name = topic.name
        if is_subscribed(group, name, subscribed):
            answer.append((name, [(p.partition_index, E.group_subscribed_to_topic) for p in topic.partitions]))
            continue
        codes = []
        for p in topic.partitions:
            codes.append((p.partition_index, E.none))
            if store.get(group_id, name, p.partition_index) is not None \
                    or store.txn.has(group_id, name, p.partition_index):  # or a pending transactional one
                records.append(OffsetCommitRecord(group_id, name, p.partition_index, None))
        answer.append((name, codes))
    return E.none, records, answer


def _delete_consumer_offsets(shard: Shard, group: ConsumerGroup, topics: Any) -> tuple[ErrorCode, list, list]:
    """ConsumerGroup.validateOffsetDelete allows it in any state; a subscribed topic's offsets stay."""
    records: list = []
    answer: list = []
    for topic in topics:
        name = topic.name
        if consumer_rules.is_subscribed(group, name):
            answer.append((name, [(p.partition_index, E.group_subscribed_to_topic) for p in topic.partitions]))
            continue
        for p in topic.partitions:
            if shard.offsets.get(group.group_id, name, p.partition_index) is not None \
                    or shard.offsets.txn.has(group.group_id, name, p.partition_index):
                records.append(OffsetCommitRecord(group.group_id, name, p.partition_index, None))
        answer.append((name, [(p.partition_index, E.none) for p in topic.partitions]))
    return E.none, records, answer


def offset_tombstones(store: OffsetStore, group_id: str) -> list:
    """deleteAllOffsets: a tombstone for every offset of the group, and for each key with only pending
    transactional offsets (their replay removes those)."""
    records = [OffsetCommitRecord(group_id, topic, partition, None) for topic, partition, _v in store.items(group_id)]
    if store.txn.has_open(group_id):
        records += [OffsetCommitRecord(group_id, topic, partition, None)
                    for topic, partition in sorted(store.txn.keys(group_id))
                    if store.get(group_id, topic, partition) is None]
    return records
