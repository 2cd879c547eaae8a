"""A shard's pending transactional offsets: the rules of rules/pending_offsets.py over the live shard's keys
(group, topic, partition) and values (OffsetValue), with the reads OffsetFetch, OffsetDelete and DeleteGroups
make of them."""

from __future__ import annotations

from coordinator.records.types import OffsetValue
from rules.pending_offsets import PendingTxnOffsets

Key = tuple[str, str, int]  # group, topic, partition


class ShardPendingOffsets(PendingTxnOffsets[Key, OffsetValue]):
    __slots__ = ()

    def has(self, group: str, topic: str, partition: int) -> bool:
        """hasPendingTransactionalOffsets."""
        producers = self.by_group.get(group)
        if not producers:
            return False
        key = (group, topic, partition)
        return any(key in self.by_producer[p] for p in producers)

    def keys(self, group: str) -> set[tuple[str, int]]:
        """(topic, partition) of the group's pending offsets, of every open producer."""
        out: set[tuple[str, int]] = set()
        for producer_id in self.by_group.get(group, ()):
            out.update((k[1], k[2]) for k in self.by_producer[producer_id] if k[0] == group)
        return out
