"""load_shard through storage.latest: a log with group deletions and re-creations, read in
small chunks (so group tombstones seal parts mid-load), loads to the state a replay of every
record on disk gives; the load stats carry the rates."""

from __future__ import annotations

import asyncio

from coordinator.groups.settings import GroupSettings
from coordinator.records import log_codec
from coordinator.records.types import GroupMetadataRecord, OffsetCommitRecord, OffsetValue
from coordinator.runtime.durable_log import DurableLog
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.loader import load_all
from coordinator.runtime.timers import FakeScheduler
from rules.placement import partition_for
from storage.dump import iter_log_records
from storage.records import GroupMetadataValue
from tests.support.offsets_log import snapshot_of

GROUPS = [g for g in (f"fold-{i}" for i in range(200)) if partition_for(g, 50) == 7][:3]


async def test_load_with_group_tombstones_equals_replay_of_every_record(tmp_path):
    assert len(GROUPS) == 3
    settings = GroupSettings()
    durable = DurableLog(str(tmp_path))
    coordinator = GroupCoordinator(settings, FakeScheduler(), durable, owned=[7])
    [shard] = coordinator.owned_shards()
    durable.open_partition(7)
    await load_all([shard], durable, None)
    a, b, c = GROUPS
    empty = GroupMetadataValue("consumer", 4, None, None, (), 1_700_000_000_000)
    steps = [
        [OffsetCommitRecord(a, "t", p, OffsetValue(i, "", 1)) for i in range(3) for p in range(4)],
        [GroupMetadataRecord(a, empty), GroupMetadataRecord(b, empty)],
        [OffsetCommitRecord(b, "t", 0, OffsetValue(5, "m", 2))],
        # DeleteGroups of a: its offsets and its group go
        [OffsetCommitRecord(a, "t", p, None) for p in range(4)] + [GroupMetadataRecord(a, None)],
        [OffsetCommitRecord(a, "t", 9, OffsetValue(1, "", 3))],  # a comes back as a simple group
        [OffsetCommitRecord(c, "u", 0, OffsetValue(1, "", 3))],
        [OffsetCommitRecord(c, "u", 0, None)],  # c's group stays, without offsets
        [GroupMetadataRecord(b, None)],  # b's group goes, its offset stays
        [OffsetCommitRecord(b, "t", 1, OffsetValue(8, "", 4)) for _ in range(3)],
    ]
    for records in steps * 3:
        await shard.write(records)
    await durable.close()

    reference = GroupCoordinator(settings, FakeScheduler())
    every = list(iter_log_records(durable.path(7)))
    for _offset, key, value in every:
        reference.shard_for(a).replay(log_codec.decode(key, value))

    durable2 = DurableLog(str(tmp_path))
    coordinator2 = GroupCoordinator(settings, FakeScheduler(), durable2, owned=[7])
    [shard2] = coordinator2.owned_shards()
    durable2.open_partition(7)
    [stats] = await load_all([shard2], durable2, None, chunk_bytes=300)
    await durable2.close()
    assert snapshot_of(coordinator2) == snapshot_of(reference)
    assert set(shard2.groups) == {a, b, c}
    assert stats["log_records"] == len(every)
    assert stats["replayed"] < len(every)
    assert stats["records_per_s"] > 0 and stats["mb_per_s"] >= 0


def test_loading_yields_to_the_loop_while_replaying(monkeypatch):
    """Survivors are replayed in turns of REPLAY_PER_TURN records."""
    from coordinator.runtime import loader

    monkeypatch.setattr(loader, "REPLAY_PER_TURN", 2)
    turns = []

    async def sleep(_delay):
        turns.append(1)

    monkeypatch.setattr(loader.asyncio, "sleep", sleep)
    pairs = [log_codec.encode(OffsetCommitRecord("g", "t", p, OffsetValue(p, "", 1))) for p in range(5)]
    replayed = []
    assert asyncio.run(loader._replay_pairs(replayed.extend, iter(pairs))) == 5
    assert len(replayed) == 5 and len(turns) == 2


class StuckLog:
    """A partition log whose one batch claims a negative lastOffsetDelta."""

    log_start_offset = 0
    log_end_offset = high_watermark = 5

    def read(self, offset, max_bytes):
        import struct

        from crc32c import crc32c

        from storage.batch import build_batch

        buf = bytearray(build_batch([(b"k", b"v", 1)], 0))
        struct.pack_into(">i", buf, 23, -1)
        struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
        return bytes(buf)


async def test_a_read_that_makes_no_progress_fails_the_partition(tmp_path):
    durable = DurableLog(str(tmp_path))
    coordinator = GroupCoordinator(GroupSettings(), FakeScheduler(), durable, owned=[3])
    [shard] = coordinator.owned_shards()
    durable.logs[3] = StuckLog()
    [stats] = await asyncio.wait_for(load_all([shard], durable, None), 10)
    assert stats == {"partition": 3, "failed": True}
