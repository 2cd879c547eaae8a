"""Retention deleting every segment of a log, the active one too (Kafka's UnifiedLog.deleteSegments):
the log first rolls to an empty segment at the log end offset, which becomes the log start offset;
the next append continues there, a restart (or a crash at any step) keeps it, and a roll that
cannot open its files fails only that retention pass."""

from __future__ import annotations

import os

import pytest
import structlog
from kio.schema.errors import ErrorCode

from storage import log_retention, log_start
from storage.errors import OffsetOutOfRangeError, StorageError
from storage.log import PartitionLog
from tests.support.data_plane import Plane, batch
from tests.support.retention import SMALL, filled_log, list_offsets, log_files, produce_n
from tests.support.storage_log import Emfile, fds_under

SIX = "00000000000000000006"  # the segment retention rolls to after offsets 0-5


def state(lg: PartitionLog) -> tuple:
    return (lg.log_start_offset, lg.log_end_offset, lg.high_watermark,
            [(s.base_offset, s.size) for s in lg.segments])


async def append(lg: PartitionLog, value: bytes) -> int:
    """Append one record durably; its offset."""
    result = lg.append(batch(value))
    await result
    return result.base_offset


async def test_deleting_every_segment_rolls_first_and_the_next_append_continues_at_the_log_end(tmp_path):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path)  # segments 0, 2, 4 (the active one), offsets 0-5
    try:
        assert await lg.delete_oldest(3, None) == 3
        assert state(lg) == (6, 6, 6, [(6, 0)])
        assert sorted(os.listdir(path)) == [f"{SIX}.log", log_start.FILE_NAME]  # no old .log/.index left
        assert log_start.read(path) == 6
        assert lg.read(6) == b""
        with pytest.raises(OffsetOutOfRangeError):
            lg.read(5)
        assert await append(lg, b"next") == 6
        assert lg.read(6)
    finally:
        await lg.close()
    again = PartitionLog.open(path, segment_bytes=int(SMALL))
    try:
        assert (again.log_start_offset, again.log_end_offset) == (6, 7)
        assert again.read(6)
    finally:
        again.close_sync()


async def test_an_idle_log_emptied_by_retention_survives_a_restart_even_without_its_checkpoint(tmp_path):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path)
    await lg.delete_oldest(3, None)
    await lg.close()
    os.remove(os.path.join(path, log_start.FILE_NAME))  # the empty segment's base offset alone says 6
    again = PartitionLog.open(path, segment_bytes=int(SMALL))
    try:
        assert state(again) == (6, 6, 6, [(6, 0)])
        assert await append(again, b"next") == 6
    finally:
        await again.close()


async def test_a_crash_after_the_roll_but_before_the_deletion_leaves_a_log_the_next_check_empties(
        tmp_path, monkeypatch):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path)

    async def no_checkpoint() -> None:
        pass

    monkeypatch.setattr(lg, "checkpoint_log_start", no_checkpoint)  # the process dies after the roll...
    monkeypatch.setattr(log_retention, "_remove", lambda *_args: None)  # ...before any file went
    assert await lg.delete_oldest(3, None) == 3
    monkeypatch.undo()
    again = PartitionLog.open(path, segment_bytes=int(SMALL))  # no close: as after kill -9
    try:
        assert state(again) == (0, 6, 6, [(0, 140), (2, 140), (4, 140), (6, 0)])  # the empty segment is kept
        infos = again.segment_infos()
        assert [i.base_offset for i in infos] == [0, 2, 4, 6]
        assert await again.delete_oldest(4, None) == 3  # never the empty last segment: no second roll
        assert state(again) == (6, 6, 6, [(6, 0)])
        assert log_files(path) == [f"{SIX}.log"]
    finally:
        await again.close()
        lg.close_sync()


async def test_an_append_not_yet_durable_keeps_the_active_segment(tmp_path):
    lg = await filled_log(str(tmp_path / "t-0"), 5)  # segments 0, 2 and the active 4 (offset 4 only)
    try:
        pending = lg.append(batch(b"in flight"))  # offset 5, in the active segment, above the high watermark
        assert await lg.delete_oldest(3, None) == 2
        await pending
        assert await lg.delete_oldest(1, None) == 1
        assert state(lg) == (6, 6, 6, [(6, 0)])
    finally:
        await lg.close()


async def test_a_log_whose_idle_write_fd_was_given_back_rolls_too(tmp_path):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path)
    try:
        lg.drop_write_fd()  # as IDLE_WRITERS does past its capacity
        assert lg.segments[-1].fd < 0
        assert await lg.delete_oldest(3, None) == 3
        assert state(lg) == (6, 6, 6, [(6, 0)])
        assert fds_under(path) == [os.path.join(path, f"{SIX}.log")]  # the old segments' fds are all closed
        assert await append(lg, b"next") == 6
    finally:
        await lg.close()


async def test_a_roll_that_cannot_open_its_files_fails_the_pass_and_leaves_the_log_as_it_was(tmp_path, monkeypatch):
    path = str(tmp_path / "t-0")
    lg = await filled_log(path)
    try:
        before, files, fds = state(lg), sorted(os.listdir(path)), fds_under(path)
        failing = Emfile(monkeypatch, path)
        failing.armed = True
        with pytest.raises(StorageError):
            await lg.delete_oldest(3, None)
        assert failing.hits
        assert (state(lg), sorted(os.listdir(path)), fds_under(path)) == (before, files, fds)
        failing.armed = False
        assert await lg.delete_oldest(3, None) == 3  # the fds are back: the next check succeeds
        assert state(lg) == (6, 6, 6, [(6, 0)])
    finally:
        await lg.close()


async def test_the_retention_check_logs_a_failed_roll_and_empties_the_idle_topic_next_time(tmp_path, monkeypatch):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 1, {"segment.bytes": SMALL, "retention.ms": "1000"})
        await produce_n(plane, 6, ts=10_000)
        retention = plane.data.retention
        retention.clock = lambda: 10**12
        failing = Emfile(monkeypatch, str(tmp_path / "t-0"))
        failing.armed = True
        with structlog.testing.capture_logs() as logs:
            assert await retention.check_all() == 0
        assert [e["event"] for e in logs if e["log_level"] == "warning"] == [
            "storage.segment.roll_failed", "data_plane.retention.failed"]
        failing.armed = False
        assert (await plane.fetch("t", 0, 0)).error_code == ErrorCode.none  # nothing was deleted
        assert await retention.check_all() == 3
        assert (await plane.call(list_offsets(-2))).topics[0].partitions[0].offset == 6
        assert (await plane.call(list_offsets(-1))).topics[0].partitions[0].offset == 6
        assert (await plane.fetch("t", 0, 0)).error_code == ErrorCode.offset_out_of_range
        produced = await plane.produce("t", 0, batch(b"after", ts=10**12))
        assert produced.base_offset == 6
