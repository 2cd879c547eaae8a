"""KIP-211 offset expiry for consumer groups (KIP-848): OffsetMetadataManager.cleanupExpiredOffsets with
ConsumerGroup's expiration condition -- an offset of a topic no member subscribes to expires `offsets.retention.ms`
after its commit (or at its explicit expire timestamp), whatever the group's state; an Empty group whose offsets
have all expired is deleted (its consumer-group records and offsets get tombstones). An offset with a commit in
flight never expires, as for classic groups, nor one with a pending transactional offset; a group with open
transactions is not deleted."""

from __future__ import annotations

from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.offset_rules import is_subscribed
from coordinator.groups.consumer.records import consumer_group_tombstones
from coordinator.offsets.store import OffsetStore
from coordinator.records.types import OffsetCommitRecord, Record
from rules.offset_expiry import is_offset_expired


def expired(group: ConsumerGroup, store: OffsetStore, now_ms: int, retention_ms: int) -> tuple[list[Record], bool]:
    """(tombstones of the expired offsets, whether the group goes)."""
    group_id = group.group_id
    in_flight = store.durable_view(group_id) if store.inflight else {}
    records: list[Record] = []
    pending = store.txn
    all_expired = not in_flight and not pending.has_open(group_id)  # open transactions keep the group
    for topic, partition, value in store.items(group_id):
        if (topic, partition) in in_flight or is_subscribed(group, topic) or pending.has(group_id, topic, partition):
            all_expired = False
            continue
        if is_offset_expired(value, value.commit_timestamp, now_ms, retention_ms):
            records.append(OffsetCommitRecord(group_id, topic, partition, None))
        else:
            all_expired = False
    return records, all_expired and group.is_empty


def expiry_records(groups: dict[str, ConsumerGroup], store: OffsetStore, now_ms: int,
                   retention_ms: int) -> tuple[list[Record], int, int]:
    """One pass over a shard's consumer groups: (records, offsets expired, groups deleted)."""
    records: list[Record] = []
    offsets = deleted = 0
    for group in list(groups.values()):
        tombstones, delete = expired(group, store, now_ms, retention_ms)
        offsets += len(tombstones)
        records += tombstones
        if delete:
            records += consumer_group_tombstones(group)
            deleted += 1
    return records, offsets, deleted
