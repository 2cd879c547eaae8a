"""The log start offset and segment deletion of a PartitionLog, and retention / DeleteRecords
through the data plane's handlers (in process, fake clock)."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from kio.schema.errors import ErrorCode

from protocol.apis import API_TABLE, ApiKey
from storage import log_start
from storage.batch import build_batch, decode_records, iter_batches
from storage.errors import OffsetOutOfRangeError
from storage.log import PartitionLog
from tests.support.data_plane import Plane, batch, ms, req
from tests.support.retention import SMALL, filled_log, list_offsets, list_offsets_for, log_files, produce_n


async def test_advance_log_start_moves_forward_only_and_never_past_the_high_watermark(tmp_path):
    lg = await filled_log(str(tmp_path / "t-0"))
    try:
        with pytest.raises(OffsetOutOfRangeError):
            lg.advance_log_start(7)
        assert lg.advance_log_start(3) == 3
        assert lg.advance_log_start(1) == 3  # never back
        with pytest.raises(OffsetOutOfRangeError):
            lg.read(2)
        assert lg.read(3)  # the batch holding offset 3
        assert lg.advance_log_start(6) == 6 == lg.high_watermark
        assert lg.read(6) == b""
    finally:
        await lg.close()


async def test_log_start_offset_survives_a_crash_once_checkpointed(tmp_path):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path)
    lg.advance_log_start(3)
    await lg.checkpoint_log_start()
    assert log_start.read(path) == 3
    with open(os.path.join(path, log_start.FILE_NAME)) as f:
        assert f.read() == "0\n1\nt 0 3\n"  # Kafka's checkpoint file format
    # no close: the process "dies" here; a new open must find the same start offset
    again = PartitionLog.open(path, segment_bytes=int(SMALL))
    try:
        assert again.log_start_offset == 3
        with pytest.raises(OffsetOutOfRangeError):
            again.read(2)
    finally:
        again.close_sync()
        await lg.close()


async def test_checkpoint_is_max_with_the_first_segment_and_garbage_is_ignored(tmp_path):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path)
    await lg.close()
    log_start.write(path, 1)
    os.remove(os.path.join(path, "00000000000000000000.log"))  # as if retention deleted segment 0
    again = PartitionLog.open(path, segment_bytes=int(SMALL))
    assert again.log_start_offset == 2
    again.close_sync()
    with open(os.path.join(path, log_start.FILE_NAME), "w") as f:
        f.write("garbage")
    again = PartitionLog.open(path, segment_bytes=int(SMALL))
    assert again.log_start_offset == 2
    again.close_sync()


async def test_delete_oldest_removes_whole_closed_segments_and_moves_the_log_start(tmp_path):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path)
    try:
        assert log_files(path) == [f"{b:020d}.log" for b in (0, 2, 4)]
        assert await lg.delete_oldest(2, None) == 2  # (all of them: tests/unit/test_retention_roll.py)
        assert log_files(path) == ["00000000000000000004.log"]
        assert not [n for n in os.listdir(path) if n.startswith("00000000000000000000")]
        assert lg.log_start_offset == 4
        with pytest.raises(OffsetOutOfRangeError):
            lg.read(3)
        await lg.append(batch(b"after"))
        assert [s.base_offset for s in lg.segments] == [4, 6]
    finally:
        await lg.close()


async def test_delete_oldest_keeps_a_just_rolled_segment_and_waits_for_the_flush(tmp_path):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path, 2)
    try:
        pending = lg.append(batch(b"rolls"))  # rolls segment 0 in this turn; its index fds go to the flush job
        assert await lg.delete_oldest(1, None) == 0
        await pending
        assert await lg.delete_oldest(1, None) == 1
        assert lg.log_start_offset == 2
    finally:
        await lg.close()


# ----------------------------------------------------------------- through the handlers

def delete_records(version: int, *entries: tuple[int, int], topic: str = "t"):
    return req(ApiKey.DELETE_RECORDS, version, timeout=ms(1000), topics=[
        {"name": topic, "partitions": [{"partition_index": p, "offset": o} for p, o in entries]}])


async def answers(plane: Plane, version: int, *entries: tuple[int, int], topic: str = "t") -> list[tuple]:
    response = await plane.call(delete_records(version, *entries, topic=topic))
    return [(p.partition_index, p.error_code, p.low_watermark) for t in response.topics for p in t.partitions]


async def settle(plane: Plane) -> None:
    """Wait for the early retention checks DeleteRecords started."""
    while plane.data.retention._early:
        await asyncio.gather(*plane.data.retention._early)


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_delete_records_moves_the_log_start_offset_durably(tmp_path, version):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 2, {"segment.bytes": SMALL})
        await produce_n(plane, 6)
        assert await answers(plane, version, (0, 3)) == [(0, ErrorCode.none, 3)]
        await settle(plane)
        part = plane.data.partition("t", 0)
        assert [s.base_offset for s in part.log.segments] == [2, 4]  # segment 0 (offsets 0-1) deleted
        fetched = await plane.fetch("t", 0, 2)
        assert (fetched.error_code, fetched.log_start_offset) == (ErrorCode.offset_out_of_range, -1)
        fetched = await plane.fetch("t", 0, 3)
        assert (fetched.error_code, fetched.log_start_offset) == (ErrorCode.none, 3)
        earliest = (await plane.call(list_offsets(-2))).topics[0].partitions[0]
        assert earliest.offset == 3
        by_time = (await plane.call(list_offsets(0))).topics[0].partitions[0]
        assert by_time.offset == 3  # the first record at or after the log start offset
        assert await answers(plane, version, (0, 1)) == [(0, ErrorCode.none, 3)]  # below: unchanged
        assert await answers(plane, version, (0, 7)) == [(0, ErrorCode.offset_out_of_range, -1)]
        assert await answers(plane, version, (0, -5)) == [(0, ErrorCode.offset_out_of_range, -1)]
        assert await answers(plane, version, (0, -1)) == [(0, ErrorCode.none, 6)]  # -1: the high watermark
        assert await answers(plane, version, (1, -1), (1, 0), (9, 0)) == [
            (1, ErrorCode.none, 0), (9, ErrorCode.unknown_topic_or_partition, -1)]  # a duplicate counts once
    async with Plane(str(tmp_path)) as plane:  # restart
        assert plane.data.partition("t", 0).log.log_start_offset == 6
        assert (await plane.fetch("t", 0, 5)).error_code == ErrorCode.offset_out_of_range


async def test_delete_records_errors(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("c", 1, {"cleanup.policy": "compact"})
        await plane.create("cd", 1, {"cleanup.policy": "compact,delete"})
        await produce_n(plane, 2, "c", keyed=True)
        await produce_n(plane, 2, "cd", keyed=True)
        assert await answers(plane, 2, (0, 1), topic="c") == [(0, ErrorCode.policy_violation, -1)]
        assert await answers(plane, 2, (0, 1), topic="cd") == [(0, ErrorCode.none, 1)]
        assert await answers(plane, 2, (0, 1), topic="nope") == [(0, ErrorCode.unknown_topic_or_partition, -1)]
        assert await answers(plane, 2, (0, 1), topic="__consumer_offsets") == [
            (0, ErrorCode.invalid_topic_exception, -1)]
        assert API_TABLE[ApiKey.DELETE_RECORDS].max_version == 2


async def test_retention_check_deletes_by_time_and_size_with_a_fake_clock(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 1, {"segment.bytes": SMALL, "retention.ms": "1000"})
        await plane.create("s", 1, {"segment.bytes": SMALL, "retention.bytes": "200"})
        await plane.create("k", 1, {"segment.bytes": SMALL, "retention.ms": "1000", "cleanup.policy": "compact"})
        for topic in ("t", "s", "k"):
            await produce_n(plane, 6, topic, ts=10_000, keyed=topic == "k")  # record timestamps 10000-10005
        retention = plane.data.retention
        retention.clock = lambda: 11_002  # segment 0 (ts <= 10001) is 1001 ms old; segment 1 is not
        assert await retention.check_all() == 1 + 1  # "t" by time; "s" by size (350 bytes: 140 + 140 + 70)
        assert [s.base_offset for s in plane.data.partition("t", 0).log.segments] == [2, 4]
        assert plane.data.partition("s", 0).log.log_start_offset == 2
        assert [s.base_offset for s in plane.data.partition("k", 0).log.segments] == [0, 2, 4]
        retention.clock = lambda: 10**12  # now every segment is old, also for the default 7 days of "s"
        assert await retention.check_all() == 2 + 2  # the active ones too: each log rolled to an empty one
        assert [s.base_offset for s in plane.data.partition("k", 0).log.segments] == [0, 2, 4]
        assert log_files(str(tmp_path / "t-0")) == log_files(str(tmp_path / "s-0")) == ["00000000000000000006.log"]
        fetched = await plane.fetch("t", 0, 0)
        assert fetched.error_code == ErrorCode.offset_out_of_range
        assert (await plane.fetch("t", 0, 6)).log_start_offset == 6
        assert (await plane.call(list_offsets(-2))).topics[0].partitions[0].offset == 6
    async with Plane(str(tmp_path)) as plane:  # restart: the deleted segments stay deleted
        assert plane.data.partition("t", 0).log.log_start_offset == 6


async def test_periodic_check_runs_on_its_interval(tmp_path):
    async with Plane(str(tmp_path), **{"log.retention.check.interval.ms": "50", "log.retention.ms": "0",
                                       "log.segment.bytes": SMALL}) as plane:
        await plane.create("t")
        await produce_n(plane, 6)
        for _ in range(100):
            if plane.data.partition("t", 0).log.log_start_offset == 6:
                break
            await asyncio.sleep(0.05)
        assert [s.base_offset for s in plane.data.partition("t", 0).log.segments] == [6]


async def test_a_failed_deletion_is_logged_and_retried(tmp_path, monkeypatch):
    from storage import log_retention

    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 1, {"segment.bytes": SMALL, "retention.ms": "0"})
        # a minute old: stamped "now + i", the last record could still be unexpired (now - ts > 0 is false)
        # when the check ran within the same milliseconds, and the active segment stayed (log start 4)
        await produce_n(plane, 6, ts=int(time.time() * 1000) - 60_000)
        monkeypatch.setattr(log_retention, "unlink_segment", lambda seg, dir_fd: (_ for _ in ()).throw(
            PermissionError("read-only file system")))
        assert await plane.data.retention.check_all() == 0  # logged, not raised
        assert plane.data.partition("t", 0).log.log_start_offset == 6  # rolled to an empty segment at 6
        assert (await plane.fetch("t", 0, 6)).error_code == ErrorCode.none
        assert len(log_files(str(tmp_path / "t-0"))) == 4  # the old files stayed
        monkeypatch.undo()
    async with Plane(str(tmp_path)) as plane:  # after a restart they are below the log start offset
        assert plane.data.partition("t", 0).log.log_start_offset == 6
        assert await plane.data.retention.check_all() == 3
        assert log_files(str(tmp_path / "t-0")) == ["00000000000000000006.log"]


# ------------------------------------------------------------------------ compaction

async def produce_keyed(plane: Plane, topic: str, pairs: list[tuple[bytes, bytes | None]]) -> None:
    now = int(time.time() * 1000)
    for i, (key, value) in enumerate(pairs):
        await plane.produce(topic, 0, build_batch([(key, value, now + i)]))


async def read_all(plane: Plane, topic: str, start: int = 0) -> list[tuple[int, bytes, bytes | None]]:
    out = []
    offset = start
    while True:
        fetched = await plane.fetch(topic, 0, offset)
        assert fetched.error_code == ErrorCode.none
        batches = list(iter_batches(fetched.records or b""))
        if not batches:
            return out
        for b in batches:
            out += [(r.offset, r.key, r.value) for r in decode_records(b) if r.offset >= offset]
        offset = batches[-1].next_offset


async def test_compact_topic_keeps_the_latest_record_of_each_key(tmp_path):
    keys = [b"a", b"b", b"c"]
    pairs = [(keys[i % 3], b"v%d" % i) for i in range(9)] + [(b"b", None), (b"d", b"last")]
    async with Plane(str(tmp_path)) as plane:
        await plane.create("k", 1, {"segment.bytes": SMALL, "cleanup.policy": "compact"})
        await produce_keyed(plane, "k", pairs)
        before = await read_all(plane, "k")
        assert len(before) == 11
        segments = [s.base_offset for s in plane.data.partition("k", 0).log.segments]
        assert segments == [0, 2, 4, 6, 8, 10]  # offset 10 is in the active segment: not cleaned
        assert await plane.data.retention.check_all() == 0  # nothing deleted, but compacted
        after = await read_all(plane, "k")
        # latest below the bound 10: a@6, b@9 (a tombstone: kept until its delete horizon), c@8
        assert after == [(6, b"a", b"v6"), (8, b"c", b"v8"), (9, b"b", None), (10, b"d", b"last")]
        assert plane.data.partition("k", 0).log.log_start_offset == 0  # compaction never moves it
        assert (await plane.call(list_offsets_for("k", -1))).topics[0].partitions[0].offset == 11
        assert not [n for n in os.listdir(tmp_path / "k-0") if n.endswith(".cleaned")]
    async with Plane(str(tmp_path)) as plane:  # restart: the compacted segments open (indexes rebuilt)
        assert await read_all(plane, "k") == after
        await produce_keyed(plane, "k", [(b"a", b"new")])
        assert (await read_all(plane, "k"))[-1] == (11, b"a", b"new")


async def test_compaction_waits_for_the_dirty_ratio(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("k", 1, {"segment.bytes": SMALL, "cleanup.policy": "compact,delete",
                                    "min.cleanable.dirty.ratio": "0.9"})
        await produce_keyed(plane, "k", [(b"a", b"%d" % i) for i in range(5)])
        await plane.data.retention.check_all()
        assert [o for o, _k, _v in await read_all(plane, "k")] == [3, 4]
        await produce_keyed(plane, "k", [(b"a", b"x"), (b"a", b"y")])  # dirty 140 of 210 closed bytes < 0.9
        await plane.data.retention.check_all()
        assert [o for o, _k, _v in await read_all(plane, "k")] == [3, 4, 5, 6]


async def test_tombstones_go_once_their_delete_horizon_passed(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("k", 1, {"segment.bytes": SMALL, "cleanup.policy": "compact",
                                    "delete.retention.ms": "1000", "min.cleanable.dirty.ratio": "0"})
        await produce_keyed(plane, "k", [(b"gone", b"v"), (b"gone", None), (b"kept", b"v"), (b"kept", b"w"),
                                         (b"x", b"active")])
        retention = plane.data.retention
        now = int(time.time() * 1000)
        retention.clock = lambda: now
        await retention.check_all()
        assert [(o, k) for o, k, _v in await read_all(plane, "k")] == [(1, b"gone"), (3, b"kept"), (4, b"x")]
        retention.clock = lambda: now + 999
        await retention.check_all()
        assert [(o, k) for o, k, _v in await read_all(plane, "k")] == [(1, b"gone"), (3, b"kept"), (4, b"x")]
        retention.clock = lambda: now + 1001
        await retention.check_all()
        assert [(o, k) for o, k, _v in await read_all(plane, "k")] == [(3, b"kept"), (4, b"x")]


async def test_many_delete_records_share_one_early_check(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 1, {"segment.bytes": SMALL})
        await produce_n(plane, 6)
        retention = plane.data.retention
        async with retention._lock:  # a check is running: the requests below queue behind it
            pending = [plane.send(delete_records(2, (0, o))) for o in (1, 2, 3, 4)]
            for out in pending:
                await asyncio.wait_for(asyncio.shield(out.future), 5)
            assert len(retention._early) == 1
        await settle(plane)
        assert [s.base_offset for s in plane.data.partition("t", 0).log.segments] == [4]


async def test_an_empty_log_starts_anew_at_an_offset_and_keeps_it_across_a_crash(tmp_path):
    """A bulk-load snapshot covers offset 1000 of a partition that has no log here yet."""
    path = str(tmp_path / "__consumer_offsets-3")
    lg = PartitionLog.open(path, segment_bytes=int(SMALL))
    await lg.start_empty_at(1000)
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark) == (1000, 1000, 1000)
    assert [s.base_offset for s in lg.segments] == [1000]
    assert log_files(path) == ["00000000000000001000.log"]  # the old empty segment is gone
    assert log_start.read(path) == 1000
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(0)
    await lg.append(build_batch([(b"k", b"v", 0)]))
    assert lg.log_end_offset == 1001
    with pytest.raises(ValueError):  # it holds a record now
        await lg.start_empty_at(2000)
    await lg.start_empty_at(5)  # at or below its end: nothing to do
    assert lg.log_start_offset == 1000
    # no close: the process "dies"; the log opens at the same start with the record
    again = PartitionLog.open(path, segment_bytes=int(SMALL))
    try:
        assert (again.log_start_offset, again.log_end_offset) == (1000, 1001)
        [record] = [r for b in iter_batches(again.read(1000)) for r in decode_records(b)]
        assert (record.offset, record.key) == (1000, b"k")
    finally:
        await again.close()
        await lg.close()
