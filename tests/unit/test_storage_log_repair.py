"""A PartitionLog after a failed write or fsync (storage/log_repair.py): the waiting appends fail, the
log cuts itself back to the end of its last successful flush and takes appends again -- no reopen, no
torn bytes read or replayed, nothing acknowledged lost -- and the log directory's health says so once."""

from __future__ import annotations

import asyncio
import errno
import os

import pytest

from storage.disk_health import DiskHealth
from storage.errors import StorageError
from storage.log import PartitionLog
from tests.support.storage_log import Disk, files, fill, read_all, rec, writable


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "topic-0")


async def failed_appends(lg: PartitionLog, first: int, n: int) -> None:
    results = [lg.append_records([rec(first + i)]) for i in range(n)]
    for result in results:
        with pytest.raises(StorageError):
            await result


@pytest.mark.parametrize("failure", ["torn write", "failed fsync"])
async def test_a_failed_write_is_cut_off_and_the_log_takes_appends_again(path, monkeypatch, failure):
    disk = Disk(monkeypatch)
    lg = PartitionLog.open(path, fsync=disk.fsync, index_interval_bytes=300)
    await fill(lg, 20)
    size = os.path.getsize(os.path.join(path, files(path, ".log")[-1]))
    if failure == "torn write":
        disk.full = True
    else:
        disk.fsync_fails = True
    await failed_appends(lg, 20, 5)
    assert lg.high_watermark == 20
    with pytest.raises(StorageError):  # refused until the repair ran
        lg.append_records([rec(99)])
    disk.full = disk.fsync_fails = False
    await writable(lg)
    assert lg.log_end_offset == lg.high_watermark == 20
    assert os.path.getsize(os.path.join(path, files(path, ".log")[-1])) == size  # the torn bytes are gone
    await fill(lg, 30)  # offsets go on from the last good one, through the index entries kept
    assert [r.offset for r in read_all(lg)] == list(range(50))
    assert [r.key for r in read_all(lg)] == [b"k%06d" % i for i in range(50)]
    await lg.close()
    again = PartitionLog.open(path)  # recovery finds exactly the acknowledged records, nothing cut
    assert [r.key for r in read_all(again)] == [b"k%06d" % i for i in range(50)]
    await again.close()


async def test_segments_a_failed_flush_rolled_to_are_removed(path, monkeypatch):
    disk = Disk(monkeypatch)
    lg = PartitionLog.open(path, fsync=disk.fsync, segment_bytes=2000, index_interval_bytes=300)
    await fill(lg, 10)
    before = files(path, ".log")
    disk.full = True
    await failed_appends(lg, 10, 40)  # enough to roll more than once
    assert len(lg.segments) > len(before)
    disk.full = False
    await writable(lg)
    assert files(path, ".log") == before and len(lg.segments) == len(before)
    await fill(lg, 60)  # rolls again; the index files of the cut segment are written whole
    await lg.close()
    again = PartitionLog.open(path, segment_bytes=2000, index_interval_bytes=300)
    assert [r.key for r in read_all(again)] == [b"k%06d" % i for i in range(70)]
    assert [s.base_offset for s in again.segments] == [s.base_offset for s in lg.segments]
    for seg in again.segments[:-1]:  # trusted on open: their index files are complete and right
        assert len(seg.offset_index) > 0
        assert seg.offset_index.file_size == len(seg.offset_index) * 8
    await again.close()


async def test_a_repair_that_fails_is_tried_again(path, monkeypatch):
    disk = Disk(monkeypatch)
    monkeypatch.setattr("storage.log_repair.RETRY_SECONDS", 0.05)
    lg = PartitionLog.open(path, fsync=disk.fsync)
    await fill(lg, 5)
    disk.fsync_fails = True
    await failed_appends(lg, 5, 3)
    await asyncio.sleep(0.2)  # the repair's own fsync fails: still refused
    with pytest.raises(StorageError):
        lg.append_records([rec(5)])
    disk.fsync_fails = False
    await writable(lg)
    await fill(lg, 5)
    assert [r.offset for r in read_all(lg)] == list(range(10))
    await lg.close()


async def test_closing_during_a_repair_is_clean(path, monkeypatch):
    disk = Disk(monkeypatch)
    monkeypatch.setattr("storage.log_repair.RETRY_SECONDS", 0.05)
    lg = PartitionLog.open(path, fsync=disk.fsync)
    await fill(lg, 5)
    disk.fsync_fails = True
    await failed_appends(lg, 5, 3)
    disk.fsync_fails = False
    await lg.close()  # waits for a repair in flight; no later repair starts
    await asyncio.sleep(0.2)
    assert lg._repairing is None and lg._repair_timer is None
    again = PartitionLog.open(path)
    assert [r.offset for r in read_all(again)] == list(range(5))
    await again.close()


async def test_without_self_repair_the_log_stays_failed(path, monkeypatch):
    disk = Disk(monkeypatch)
    lg = PartitionLog.open(path, fsync=disk.fsync, self_repair=False)
    await fill(lg, 2)
    disk.full = True
    await failed_appends(lg, 2, 1)
    disk.full = False
    await asyncio.sleep(0.1)
    with pytest.raises(StorageError):
        lg.append_records([rec(2)])
    await lg.close()


async def test_repaired_callbacks_run_once_the_log_takes_appends(path, monkeypatch):
    disk = Disk(monkeypatch)
    lg = PartitionLog.open(path, fsync=disk.fsync)
    seen = []
    lg.on_repaired.append(lambda: seen.append(lg.log_end_offset))
    await fill(lg, 3)
    disk.full = True
    await failed_appends(lg, 3, 2)
    disk.full = False
    await writable(lg)
    assert seen == [3]
    await lg.close()


def test_disk_health_logs_once_per_episode_and_confirms_recovery(capsys):
    now = [0.0]
    health = DiskHealth(clock=lambda: now[0]).dir_of("/data/t-0")
    assert health.path == "/data"
    lines = []
    import storage.disk_health as module

    class Recorder:
        def error(self, event, **fields):
            lines.append(event)

        def warning(self, event, **fields):
            lines.append(event)

    real, module.log = module.log, Recorder()
    try:
        for _ in range(100):  # a full disk: many failed writes, one line
            health.failed("/data/t-0", OSError(errno.ENOSPC, "full"))
        assert health.failing and lines == ["storage.dir.write_failing"]
        health.succeeded()  # a small write fitted; then failures again: the same episode
        assert not health.failing and health.watch and health.failing_now()
        health.failed("/data/t-0", OSError(errno.ENOSPC, "full"))
        assert health.episodes == 1 and lines == ["storage.dir.write_failing"]
        health.succeeded()
        now[0] += 1
        health.succeeded()  # not yet confirmed
        assert lines == ["storage.dir.write_failing"]
        assert health.failing_now()
        now[0] += 2
        assert not health.failing_now()
        health.succeeded()
        assert lines == ["storage.dir.write_failing", "storage.dir.write_recovered"] and not health.watch
        now[0] += 10
        health.failed("/data/t-0", OSError(errno.EIO, "io"))  # a new episode within REPEAT_SECONDS: counted
        assert health.episodes == 2 and len(lines) == 2
        assert health.write_errors == 102
    finally:
        module.log = real
