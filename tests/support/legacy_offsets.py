"""Builders of the legacy (pre-kio) OffsetCommit v0/v1 and OffsetFetch v0 requests."""

from __future__ import annotations

from kio.static.primitive import i32, i64

from protocol import legacy_messages as m


def commit_v0(group: str, offsets: dict[tuple[str, int], int], metadata: str | None = "") -> m.OffsetCommitRequestV0:
    by_topic: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(m.OffsetCommitRequestPartitionV0(
            partition_index=i32(partition), committed_offset=i64(offset), committed_metadata=metadata))
    return m.OffsetCommitRequestV0(group_id=group, topics=tuple(
        m.OffsetCommitRequestTopicV0(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


def commit_v1(group: str, offsets: dict[tuple[str, int], int | tuple[int, int]], *, generation: int = -1,
              member: str = "", metadata: str | None = "") -> m.OffsetCommitRequestV1:
    """offsets: (topic, partition) -> offset, or (offset, commit timestamp)."""
    by_topic: dict[str, list] = {}
    for (topic, partition), value in offsets.items():
        offset, stamp = value if isinstance(value, tuple) else (value, -1)
        by_topic.setdefault(topic, []).append(m.OffsetCommitRequestPartitionV1(
            partition_index=i32(partition), committed_offset=i64(offset), commit_timestamp=i64(stamp),
            committed_metadata=metadata))
    return m.OffsetCommitRequestV1(group_id=group, generation_id=i32(generation), member_id=member, topics=tuple(
        m.OffsetCommitRequestTopicV1(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


def fetch_v0(group: str, topics: dict[str, list[int]]) -> m.OffsetFetchRequestV0:
    return m.OffsetFetchRequestV0(group_id=group, topics=tuple(
        m.OffsetFetchRequestTopicV0(name=t, partition_indexes=tuple(i32(p) for p in ps)) for t, ps in topics.items()))
