"""KIP-211 expiry of live groups, and the swap of the expire job's staging areas."""

from __future__ import annotations

import json
import os

from kio.schema.errors import ErrorCode

from coordinator.groups.settings import GroupSettings
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_all
from coordinator.runtime.staging import check_partition
from coordinator.runtime.timers import FakeScheduler
from storage.batch import decode_records, iter_batches
from storage.cleaner import clean_segment, write_segment_files
from storage.compaction import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    TOMBSTONES_FILE,
    fingerprint,
    live_segments,
    tombstone_batches,
    write_json_atomic,
)
from tests.support.expire_cases import RETENTION, same_partition_groups
from tests.support.groups import subscription
from tests.support.offsets import OffsetsHarness, commit_request

E = ErrorCode
HOUR = 3_600_000


def offsets_of(h: OffsetsHarness, group: str) -> dict:
    return {(t, p): v.offset for t, p, v in h.coordinator.shard_for(group).offsets.items(group)}


def run_expiry(h: OffsetsHarness) -> list:
    before = len(h.log.all_records())
    for shard in h.coordinator.all_shards():
        shard.expire(h.clock.wall_ms(), RETENTION)
    h.log.complete()
    return h.log.all_records()[before:]


async def test_empty_group_expires_from_when_it_became_empty_and_is_deleted():
    h = OffsetsHarness(offsets_retention_ms=RETENTION)
    [leader] = h.stable_group(1, session=1_200_000)
    h.commit(commit_request(9, "g", {("t", 0): 5}, generation=h.group().generation_id, member=leader))
    h.clock.advance(RETENTION)  # the commit is old, but the group is Stable and subscribed
    assert run_expiry(h) == []
    h.leave(leader)
    h.log.complete()
    h.clock.advance(RETENTION - 1)  # Empty for less than the retention
    assert run_expiry(h) == []
    h.clock.advance(1)
    written = run_expiry(h)
    assert written == [OffsetCommitRecord("g", "t", 0, None), GroupMetadataRecord("g", None)]
    assert h.coordinator.group("g") is None


async def test_stable_group_expires_only_unsubscribed_topics():
    h = OffsetsHarness(offsets_retention_ms=RETENTION)
    [leader] = h.stable_group(1, session=1_200_000, protocols=(("range", subscription(["t"])),))
    gen = h.group().generation_id
    h.commit(commit_request(9, "g", {("t", 0): 1, ("old", 0): 2}, generation=gen, member=leader))
    h.clock.advance(RETENTION)
    h.heartbeat(leader, gen)
    assert run_expiry(h) == [OffsetCommitRecord("g", "old", 0, None)]
    assert offsets_of(h, "g") == {("t", 0): 1}
    assert h.group().state.value == "Stable"


async def test_pending_commit_never_expires_and_expire_timestamp_wins():
    h = OffsetsHarness(offsets_retention_ms=RETENTION)
    h.commit(commit_request(2, "s", {("t", 0): 1}, retention_ms=1000))  # v1 expire timestamp: now + 1 s
    h.commit(commit_request(9, "s", {("t", 1): 1}))
    h.clock.advance(1000)
    assert run_expiry(h) == [OffsetCommitRecord("s", "t", 0, None)]  # t-1 is young
    h.clock.advance(RETENTION)
    pending = h.commit(commit_request(9, "s", {("t", 1): 2}), complete=False)
    for shard in h.coordinator.all_shards():
        shard.expire(h.clock.wall_ms(), RETENTION)
    assert all(r.value is not None for r in h.log.all_records()[-1:])  # nothing expired while pending
    h.log.complete()
    assert pending.future.done()
    assert offsets_of(h, "s") == {("t", 1): 2}


async def test_expire_all_logs_kafka_line(capsys):
    h = OffsetsHarness(offsets_retention_ms=RETENTION)
    h.commit(commit_request(9, "s", {("t", 0): 1}))
    h.clock.advance(RETENTION)
    assert h.coordinator.expire_offsets() == (1, 1)  # all its offsets expired: the simple group goes too
    assert h.coordinator.stats.offsets_expired == 0  # counted for /metrics once the tombstones are written
    h.log.complete()
    assert h.coordinator.stats.offsets_expired == 1
    assert h.coordinator.expire_offsets() == (0, 0)
    assert "Removed 1 expired offsets in" in capsys.readouterr().out


# --- staging swap ------------------------------------------------------------------------------

def stage(partition_dir: str, tombstones: list[dict], now_ms: int, staging_id: str = ".staging-1-test") -> dict:
    """What spark_jobs.expire leaves, built with the same storage helpers (no Spark)."""
    live = live_segments(partition_dir)
    bases = sorted(live)
    upper = bases[-1]
    latest: dict[bytes, int] = {}
    for base in bases[:-1]:
        with open(live[base], "rb") as f:
            for batch in iter_batches(f.read()):
                for r in decode_records(batch):
                    latest[r.key] = r.offset
    keep = set(latest.values())
    staging = os.path.join(partition_dir, staging_id)
    os.makedirs(staging)
    segments = []
    for i, base in enumerate(bases[:-1]):
        with open(live[base], "rb") as f:
            data = f.read()
        cleaned = clean_segment(data, keep.__contains__, now_ms=now_ms, delete_retention_ms=86_400_000,
                                upper_bound=upper)
        write_segment_files(staging, base, cleaned.data)
        name = os.path.basename(live[base])
        original = fingerprint(live[base], data)
        original.update(last_offset=bases[i + 1] - 1, next_offset=bases[i + 1])
        segments.append({"base_offset": base, "file": name, "original": original,
                         "cleaned": {"file": name, "size": len(cleaned.data),
                                     "crc32c": fingerprint(os.path.join(staging, name), cleaned.data)["crc32c"],
                                     "empty": not cleaned.data, "last_offset": cleaned.last_offset}})
    data = tombstone_batches(tombstones, now_ms)
    with open(os.path.join(staging, TOMBSTONES_FILE), "wb") as f:
        f.write(data)
    meta = fingerprint(os.path.join(staging, TOMBSTONES_FILE), data)
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "id": staging_id,
                "partition": int(partition_dir.rsplit("-", 1)[1]), "created_at_ms": now_ms,
                "settings": {"offsets.retention.ms": RETENTION, "now_ms": now_ms},
                "upper_bound": upper, "covered_log_end_offset": 0,
                "active_segment": {"base_offset": upper, "size": os.path.getsize(live[upper])},
                "segments": segments,
                "tombstones": {"file": TOMBSTONES_FILE, "count": len(tombstones), "size": meta["size"],
                               "crc32c": meta["crc32c"], "records": tombstones}, "stats": {}}
    write_json_atomic(os.path.join(staging, MANIFEST), manifest)
    return manifest


async def _coordinator(root: str, partition: int, clock: FakeScheduler):
    durable = DurableLog(root, segment_bytes=600)
    coordinator = GroupCoordinator(GroupSettings(offsets_retention_ms=RETENTION), clock, durable, owned=[partition])
    shards = coordinator.owned_shards()
    durable.open_partition(partition)
    await load_all(shards, durable, None)
    return durable, coordinator, shards[0]


async def test_staging_swap_applied_and_tombstones_rechecked(tmp_path):
    dead, alive, p = same_partition_groups()
    clock = FakeScheduler()
    durable, coordinator, shard = await _coordinator(str(tmp_path), p, clock)
    old = clock.wall_ms()
    for i in range(30):  # superseded commits over several segments
        await shard.write([OffsetCommitRecord(dead, "t", 0, OffsetValue(i, "", old)),
                           OffsetCommitRecord(alive, "t", 0, OffsetValue(i, "", old))])
    assert len(durable.logs[p].segments) > 3
    path = durable.path(p)
    before = sum(os.path.getsize(f) for f in live_segments(path).values())
    clock.advance(RETENTION + 1)
    now = clock.wall_ms()
    manifest = stage(path, [
        {"type": "offset_commit", "group": dead, "topic": "t", "partition": 0, "decided_on_offset": 58,
         "reason": "simple_group"},
        {"type": "offset_commit", "group": alive, "topic": "t", "partition": 0, "decided_on_offset": 59,
         "reason": "simple_group"},
        {"type": "group_metadata", "group": dead, "decided_on_offset": None, "reason": "empty_group_without_offsets"},
    ], now)
    # the "alive" group commits again after the job read the log: its tombstone must be dropped
    await shard.write([OffsetCommitRecord(alive, "t", 0, OffsetValue(99, "", now))])
    assert await check_partition(coordinator, durable, p) == ["applied"]
    assert not os.path.exists(os.path.join(path, manifest["id"]))
    after = sum(os.path.getsize(f) for f in live_segments(path).values())
    assert after < before
    await durable.flush()
    assert coordinator.group(dead) is None
    assert {(t, q): v.offset for t, q, v in shard.offsets.items(alive)} == {("t", 0): 99}
    # commits keep working on the reopened log, and a reload equals the live state
    await shard.write([OffsetCommitRecord(alive, "t", 1, OffsetValue(5, "", now))])
    await durable.close()
    durable2, coordinator2, shard2 = await _coordinator(str(tmp_path), p, FakeScheduler())
    assert shard2.offsets.by_group == shard.offsets.by_group
    assert set(shard2.groups) == {alive}
    await durable2.close()


async def test_staging_refused_when_log_moved(tmp_path, capsys):
    dead, alive, p = same_partition_groups()
    clock = FakeScheduler()
    durable, coordinator, shard = await _coordinator(str(tmp_path), p, clock)
    for i in range(30):
        await shard.write([OffsetCommitRecord(dead, "t", 0, OffsetValue(i, "", clock.wall_ms()))])
    path = durable.path(p)
    manifest = stage(path, [], clock.wall_ms())
    manifest["active_segment"]["size"] += 10_000  # as if the log had been truncated since the job ran
    with open(os.path.join(path, manifest["id"], MANIFEST), "w") as f:
        json.dump(manifest, f)
    sizes = {b: os.path.getsize(f) for b, f in live_segments(path).items()}
    assert await check_partition(coordinator, durable, p) == ["refused"]
    assert "staged compaction refused" in capsys.readouterr().out
    assert {b: os.path.getsize(f) for b, f in live_segments(path).items()} == sizes
    assert not os.path.exists(os.path.join(path, manifest["id"]))
    await shard.write([OffsetCommitRecord(dead, "t", 0, OffsetValue(100, "", 1))])
    await durable.close()
