"""The Spark jobs carry KIP-848 consumer-group records: expire compacts them to the newest per key
(tombstones by the cleaner's rules), never expires them, keeps the offsets of the topics a consumer
group subscribes to and never deletes the group; bulk load puts the live ones into the snapshot,
which the loader replays (local[2], one session)."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from coordinator.groups.consumer.model import MemberState
from coordinator.records import log_codec
from coordinator.records.types import (
    ConsumerGroupCurrentAssignmentRecord,
    ConsumerGroupEpochRecord,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMemberSubscriptionRecord,
    ConsumerGroupRegularExpressionRecord,
    ConsumerGroupTargetAssignmentRecord,
    CurrentAssignment,
    ResolvedRegularExpression,
)
from spark_jobs.bulk_load import run as bulk_load
from spark_jobs.expire import run as expire
from storage.compaction import list_staging
from storage.dump import iter_log_records
from storage.records import OffsetCommitKey
from storage.snapshot import latest_snapshot, read_records, state_of
from tests.support.expire_cases import NOW, OLD, RECENT, RETENTION_MIN
from tests.support.spark import commit, offsets_dir, write_log

T = uuid.UUID(int=7)
G = "cg"


def rec(record, ts=RECENT):
    return (*log_codec.encode(record), ts)


def member(member_id, topics, regex=None):
    return ConsumerGroupMemberSubscriptionRecord(G, member_id, ConsumerGroupMemberMetadataValue(
        client_id="c", client_host="/h", subscribed_topic_names=tuple(topics), subscribed_topic_regex=regex))


def current(member_id, epoch):
    return ConsumerGroupCurrentAssignmentRecord(G, member_id, CurrentAssignment(
        epoch, epoch - 1, MemberState.STABLE, {T: frozenset({0})}, {}))


FINAL = [  # the live records the log ends with, newest value per key
    ConsumerGroupEpochRecord(G, 3),
    member("m1", ["A"]),
    current("m1", 3),
    ConsumerGroupTargetAssignmentRecord(G, "m1", {T: frozenset({0, 1})}),
    ConsumerGroupRegularExpressionRecord(G, "r.*", ResolvedRegularExpression(frozenset({"R"}), 1, 5)),
]


def build(path):
    early = [[rec(ConsumerGroupEpochRecord(G, e)), rec(member("m1", ["A", "B"])), rec(current("m1", e)),
              rec(member("m2", ["A"])), rec(ConsumerGroupTargetAssignmentRecord(G, "m2", {T: frozenset({2})}))]
             for e in (1, 2)]
    offsets = [[commit(G, topic, 0, 10, OLD) for topic in ("A", "R", "Z")]]
    leave = [[rec(ConsumerGroupMemberSubscriptionRecord(G, "m2", None)),
              rec(ConsumerGroupTargetAssignmentRecord(G, "m2", None)),
              rec(ConsumerGroupCurrentAssignmentRecord(G, "m2", None))]]
    filler = [[commit("filler", "f", 0, i, RECENT)] for i in range(25)]
    write_log(path, early + offsets + leave + [[rec(r) for r in FINAL]] + filler, segment_bytes=1200)


@pytest.fixture(scope="module")
def log_root(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("cg-logs"))
    build(offsets_dir(root, 0))
    return root


def test_expire_compacts_consumer_group_records_and_keeps_subscribed_offsets(spark, log_root):
    path = offsets_dir(log_root, 0)
    summary = expire(["--master", "local[2]", "--log-dirs", log_root, "--offsets-retention-minutes",
                      str(RETENTION_MIN), "--now-ms", str(NOW), "--offsets-partitions", "1"], spark=spark)
    [(staging, manifest)] = list_staging(path)
    # KIP-211 for a consumer group: A (a member's topic) and R (its regex's) stay, Z expires; no group deletion
    assert {(t["type"], t["group"], t.get("topic")) for t in manifest["tombstones"]["records"]} == {
        ("offset_commit", G, "Z")}
    assert summary["deleted_groups"] == 0
    kept = [(key, value) for seg in manifest["segments"] if not seg["cleaned"]["empty"]
            for _, key, value in iter_log_records(os.path.join(staging, seg["cleaned"]["file"]))]
    consumer = [(k, v) for k, v in kept if k is not None and k[:2] != b"\x00\x01"]
    keys = [k for k, _ in consumer]
    assert len(keys) == len(set(keys))  # the newest record per key, once
    live = {k: v for k, v in consumer if v is not None}
    assert live == dict(log_codec.encode(r) for r in FINAL)
    # m2's records were tombstoned: the tombstones stay (first cleaning: delete horizon set), values gone
    gone = {k for k, v in consumer if v is None}
    assert gone == {log_codec.encode(r)[0] for r in (
        ConsumerGroupMemberSubscriptionRecord(G, "m2", None), ConsumerGroupTargetAssignmentRecord(G, "m2", None),
        ConsumerGroupCurrentAssignmentRecord(G, "m2", None))}


def test_bulk_load_carries_live_consumer_group_records_into_the_snapshot(spark, log_root, tmp_path):
    out = str(tmp_path / "snapshots")
    bulk_load(["--master", "local[2]", "--input", log_root, "--output", out, "--offsets-partitions", "1"],
              spark=spark)
    info = latest_snapshot(out, 0)
    assert info is not None and info.manifest["consumer_group_records"] == len(FINAL)
    _, pairs = read_records(info.path)
    consumer = [(k, v) for k, v in pairs if k[:2] not in (b"\x00\x01", b"\x00\x02")]
    assert sorted(consumer) == sorted(log_codec.encode(r) for r in FINAL)
    assert info.manifest["offsets"] == 4  # cg's three and filler's one
    assert sum(1 for key, _ in state_of(pairs) if isinstance(key, OffsetCommitKey)) == 4

    # the loader replays them into the shard's consumer_replay, before the offsets
    from coordinator.groups.settings import GroupSettings
    from coordinator.runtime.group_coordinator import GroupCoordinator
    from coordinator.runtime.loader import _replay_snapshot
    from coordinator.runtime.timers import FakeScheduler
    from coordinator.runtime.writes import MemoryLog

    shard = GroupCoordinator(GroupSettings(offsets_partitions=1), FakeScheduler(), MemoryLog(auto=False)).shard_for(G)
    seen: list = []
    shard.consumer_replay = lambda r: seen.append((r, shard.offsets.count()))  # type: ignore[attr-defined]
    asyncio.run(_replay_snapshot(shard, info.path))
    assert sorted(map(repr, (r for r, _ in seen))) == sorted(map(repr, FINAL))
    assert {count for _, count in seen} == {0}  # replayed before any offset


def test_share_group_records_are_compacted_and_carried_into_snapshots(spark, tmp_path):
    """KIP-932 share-group records (types 10-15) are a group's records too: compaction keeps the newest per
    raw key, bulk load carries the live ones into the snapshot (the loader skips them until share groups
    are wired into the shard), and they count as placed in their group's partition."""
    from storage import share_group_records as sg

    root = str(tmp_path / "logs")
    metadata = [sg.encode(sg.ShareGroupMetadataKey("sg"), sg.ShareGroupMetadataValue(e, 9)) for e in (1, 2)]
    member = sg.encode(sg.ShareGroupMemberMetadataKey("sg", "m"), sg.ShareGroupMemberMetadataValue(None, "c", "/h",
                                                                                                  ("t",)))
    filler = [[commit("filler", "f", 0, i, RECENT)] for i in range(25)]
    write_log(offsets_dir(root, 0), [[(*metadata[0], RECENT), (*member, RECENT)], [(*metadata[1], RECENT)]] + filler,
              segment_bytes=1200)
    out = str(tmp_path / "snapshots")
    summary = bulk_load(["--master", "local[2]", "--input", root, "--output", out, "--offsets-partitions", "1"],
                        spark=spark)
    assert summary["same_layout"]
    info = latest_snapshot(out, 0)
    assert info is not None
    _, pairs = read_records(info.path)
    assert sorted(kv for kv in pairs if sg.is_share_group_key(kv[0])) == sorted([metadata[1], member])
    expire(["--master", "local[2]", "--log-dirs", root, "--offsets-retention-minutes", str(RETENTION_MIN),
            "--now-ms", str(NOW), "--offsets-partitions", "1"], spark=spark)
    [(staging, manifest)] = list_staging(offsets_dir(root, 0))
    kept = [(key, value) for seg in manifest["segments"] if not seg["cleaned"]["empty"]
            for _, key, value in iter_log_records(os.path.join(staging, seg["cleaned"]["file"]))]
    assert sorted(kv for kv in kept if kv[0] is not None and sg.is_share_group_key(kv[0])) == sorted(
        [metadata[1], member])
    assert not manifest["tombstones"]["records"] or all(t["group"] != "sg" for t in manifest["tombstones"]["records"])
