"""The expire job's test log: every KIP-211 case plus compaction material over several segments, and the
tombstones expected of it (spark_jobs.expire on segment files and on PostgreSQL rows); and two groups of one
offsets partition for the server's staging tests (local and cluster mode)."""

from __future__ import annotations

from rules.placement import partition_for
from storage.records import GroupMetadataValue, MemberMetadata
from tests.support.spark import commit, delete_group, delete_offset, encode_subscription, group_meta, write_log

NOW = 10_000_000_000
RETENTION_MIN = 60
OLD = NOW - RETENTION_MIN * 60_000 - 1  # just past offsets.retention.ms
RECENT = NOW - 1000
DELETE_RETENTION = 50_000


def consumer_group(members, state_ts=-1, protocol_type="consumer"):
    return GroupMetadataValue(protocol_type, 4 if members else 5, "range" if members else None,
                              members[0].member_id if members else None, tuple(members), state_ts)


def member(mid, topics, version=1):
    return MemberMetadata(mid, "c", "/h", 10000, encode_subscription(topics, version, b"ud",
                          [(topics[0], (0,))] if version >= 1 else ()), b"", None, 30000)


def build_log(path):
    """Every KIP-211 case plus compaction material, over several segments."""
    filler = [[commit("filler", "f", i % 3, i, RECENT)] for i in range(30)]  # superseded commits
    batches = [
        [group_meta("empty-old", consumer_group([], NOW - RETENTION_MIN * 60_000)),
         commit("empty-old", "t", 0, 1, RECENT), commit("empty-old", "t", 1, 1, RECENT)],
        [group_meta("empty-young", consumer_group([], NOW - 1000)), commit("empty-young", "t", 0, 1, OLD)],
        [group_meta("stable", consumer_group([member("m1", ["A"], version=3)])),
         commit("stable", "A", 0, 1, OLD), commit("stable", "B", 0, 1, OLD), commit("stable", "B", 1, 1, RECENT)],
        [commit("expire-ts", "t", 0, 1, RECENT, expire=NOW - 1), commit("expire-ts", "t", 1, 1, OLD, expire=NOW + 1)],
        [commit("simple-old", "t", 0, 1, OLD), commit("simple-old", "t", 1, 1, OLD)],
        [group_meta("empty-no-offsets", consumer_group([], RECENT))],
        [group_meta("deleted", consumer_group([], OLD)), commit("deleted", "t", 0, 1, OLD)],
        [delete_offset("deleted", "t", 0, 5), delete_group("deleted", 5)],  # tombstones in a closed segment
        [group_meta("connect", consumer_group([member("w1", ["A"])], protocol_type="connect")),
         commit("connect", "Z", 0, 1, OLD)],
        [group_meta("empty-no-ts", consumer_group([], -1)), commit("empty-no-ts", "t", 0, 1, OLD),
         commit("empty-no-ts", "t", 1, 1, RECENT)],
    ] + filler + [[commit("stable", "A", 0, 2, OLD)]]  # supersedes a closed-segment record from the active one
    write_log(path, batches, segment_bytes=1500)


EXPECTED = {
    ("offset_commit", "empty-old", "t", 0), ("offset_commit", "empty-old", "t", 1), ("group_metadata", "empty-old"),
    ("offset_commit", "stable", "B", 0),
    ("offset_commit", "expire-ts", "t", 0),
    ("offset_commit", "simple-old", "t", 0), ("offset_commit", "simple-old", "t", 1), ("group_metadata", "simple-old"),
    ("group_metadata", "empty-no-offsets"),
    ("offset_commit", "empty-no-ts", "t", 0),
}


def tomb_key(t):
    if t["type"] == "offset_commit":
        return (t["type"], t["group"], t["topic"], t["partition"])
    return (t["type"], t["group"])




RETENTION = 10 * 60_000  # the staging tests' offsets.retention.ms: shorter than their sessions, members stay
GROUP_DEAD = "dead-one"


def same_partition_groups() -> tuple[str, str, int]:
    """Two groups of one offsets partition (of 50) and that partition."""
    p = partition_for(GROUP_DEAD, 50)
    alive = next(g for g in (f"alive-{i}" for i in range(10_000)) if partition_for(g, 50) == p)
    return GROUP_DEAD, alive, p
