"""PartitionLog under fd exhaustion: a roll that cannot open its files changes nothing and the
next append succeeds; a flush never opens a file; rolled segments hold no fd."""

from __future__ import annotations

import asyncio
import errno
import os
import threading

import pytest

import storage.log_files
import storage.segment
from storage.batch import build_batch
from storage.errors import StorageError
from storage.handles import IdleWriters, ReadHandles
from storage.log import PartitionLog
from tests.support.storage_log import Emfile, fds_under, files, fill, read_all, rec

SEGMENT_BYTES = 1000  # a 300-byte record's batch is ~370 bytes: two per segment


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "topic-0")


def snapshot(lg: PartitionLog, path: str):
    return (lg.log_end_offset, lg.high_watermark, [(s.base_offset, s.size) for s in lg.segments],
            sorted(os.listdir(path)), fds_under(path))


async def two_full_segments(path: str) -> PartitionLog:
    lg = PartitionLog.open(path, segment_bytes=SEGMENT_BYTES)
    await fill(lg, 4, size=300)
    assert len(lg.segments) == 2 and lg.segments[-1].size > SEGMENT_BYTES // 2  # the next append rolls
    return lg


def assert_offsets(lg: PartitionLog, count: int) -> None:
    assert [r.offset for r in read_all(lg)] == list(range(count))


@pytest.mark.parametrize("which", [".log", ".index", ".timeindex", "dir"])
async def test_a_roll_that_cannot_open_a_file_changes_nothing_and_the_next_append_succeeds(
        path, monkeypatch, which):
    lg = await two_full_segments(path)
    failing = Emfile(monkeypatch, path, lambda name: name.endswith(which) if which != "dir" else name == path)
    before = snapshot(lg, path)
    failing.armed = True
    for attempt in range(2):  # the retry must not find anything left over from the first try
        with pytest.raises(StorageError) as caught:
            lg.append_records([rec(4 + attempt, 300)])
        assert caught.value.errno == errno.EMFILE
        assert snapshot(lg, path) == before  # same offsets, segments, files and open fds
    assert failing.hits == 2
    failing.armed = False
    await lg.append_records([rec(4, 300)])  # resources are back: the partition works
    await fill(lg, 3, size=300)  # and rolls again
    assert len(lg.segments) == 4
    assert_offsets(lg, 8)
    await lg.close()
    lg = PartitionLog.open(path, segment_bytes=SEGMENT_BYTES)
    assert_offsets(lg, 8)
    assert files(path, ".log") == [f"{b:020d}.log" for b in (0, 2, 4, 6)]
    await lg.close()


async def test_a_batch_of_an_append_that_needs_a_failing_roll_is_not_half_appended(path, monkeypatch):
    lg = PartitionLog.open(path, segment_bytes=SEGMENT_BYTES)
    await fill(lg, 1, size=300)
    fits = build_batch([rec(1, 300)])
    rolls = build_batch([rec(2, 300)])  # the third batch does not fit: it needs a new segment
    failing = Emfile(monkeypatch, path)
    before = snapshot(lg, path)
    failing.armed = True
    with pytest.raises(StorageError):
        lg.append(fits + rolls)
    assert snapshot(lg, path) == before
    failing.armed = False
    result = lg.append(fits + rolls)
    assert (result.base_offset, result.last_offset) == (1, 2)
    await result
    assert_offsets(lg, 3)
    await lg.close()


async def test_a_flush_opens_no_file_so_fd_exhaustion_cannot_fail_it(path, monkeypatch):
    lg = await two_full_segments(path)
    failing = Emfile(monkeypatch, path)
    rolled = lg.append_records([rec(4, 300)])  # the roll opened its files; the flush has not run
    failing.armed = True
    await rolled  # durable: the flush needed no new fd
    await lg.append_records([rec(5, 300)])
    assert failing.hits == 0
    failing.armed = False
    assert_offsets(lg, 6)
    await lg.close()


async def test_rolled_segments_hold_no_fd_and_reads_borrow_a_bounded_number(path, monkeypatch):
    handles = ReadHandles(capacity=3)
    monkeypatch.setattr(storage.segment, "HANDLES", handles)
    lg = PartitionLog.open(path, segment_bytes=SEGMENT_BYTES)
    await fill(lg, 40, size=300)
    assert len(lg.segments) == 20
    active = os.path.join(path, f"{lg.segments[-1].base_offset:020d}.log")
    assert fds_under(path) == [active]
    assert_offsets(lg, 40)  # reads every segment
    assert len(fds_under(path)) == 1 + 3
    await lg.close()
    assert fds_under(path) == []
    lg = PartitionLog.open(path, segment_bytes=SEGMENT_BYTES)  # recovery leaves older segments closed too
    assert fds_under(path) == [active]
    assert_offsets(lg, 40)
    await lg.close()


async def test_a_read_without_fds_fails_retriably_and_works_when_fds_return(path, monkeypatch):
    monkeypatch.setattr(storage.segment, "HANDLES", ReadHandles(capacity=3))
    lg = await two_full_segments(path)
    await fill(lg, 2, size=300)
    failing = Emfile(monkeypatch, path)
    failing.armed = True
    with pytest.raises(StorageError) as caught:
        lg.read(0)
    assert caught.value.errno == errno.EMFILE
    assert lg.read(4)  # the active segment has its own fd
    failing.armed = False
    await lg.append_records([rec(6, 300)])  # the log was not failed by it
    assert_offsets(lg, 7)
    await lg.close()


async def test_many_partitions_hold_a_bounded_number_of_write_fds(tmp_path, monkeypatch):
    monkeypatch.setattr(storage.log_files, "IDLE_WRITERS", IdleWriters(capacity=4))
    monkeypatch.setattr(storage.segment, "HANDLES", ReadHandles(capacity=4))
    root = str(tmp_path)
    logs = [PartitionLog.open(os.path.join(root, f"t-{p}")) for p in range(30)]
    assert len(fds_under(root)) == 4  # opening (recovery) keeps only the most recent writers' fds
    await asyncio.gather(*(lg.append_records([rec(0)]) for lg in logs))  # all written at once
    assert len(fds_under(root)) == 4  # idle again: the least recently written closed their fds
    for lg in logs:
        assert_offsets(lg, 1)  # reading an idle log borrows a read fd
    assert len(fds_under(root)) <= 4 + 4
    failing = Emfile(monkeypatch, root)
    failing.armed = True
    before = snapshot(logs[0], logs[0].path)
    with pytest.raises(StorageError) as caught:  # its write fd was closed and cannot be reopened now
        logs[0].append_records([rec(1)])
    assert caught.value.errno == errno.EMFILE
    assert snapshot(logs[0], logs[0].path)[:4] == before[:4]
    failing.armed = False
    await logs[0].append_records([rec(1)])
    assert_offsets(logs[0], 2)
    for lg in logs:
        await lg.close()
    assert fds_under(root) == []


def test_read_handles_lru_never_closes_a_borrowed_fd(tmp_path, monkeypatch):
    paths = []
    for name in "abc":
        p = tmp_path / name
        p.write_bytes(name.encode())
        paths.append(str(p))
    a, b, c = paths
    handles = ReadHandles(capacity=1)
    fd_a = handles.acquire(a)
    with handles.reading(b) as fd_b:  # over capacity, but both are borrowed
        assert os.pread(fd_a, 1, 0) == b"a" and os.pread(fd_b, 1, 0) == b"b"
    assert len(handles) == 1 and fds_under(str(tmp_path)) == [a]  # b was idle: evicted
    handles.forget(a)  # deleted while borrowed: closed only when returned
    assert os.pread(fd_a, 1, 0) == b"a"
    handles.release(a, fd_a)
    assert fds_under(str(tmp_path)) == []
    with handles.reading(b):
        pass
    failing = Emfile(monkeypatch, str(tmp_path), lambda name: name == c)
    failing.armed = True
    with pytest.raises(StorageError):
        handles.acquire(c)
    assert failing.hits == 2  # tried again after closing its idle fds
    assert fds_under(str(tmp_path)) == []


async def test_a_failed_fsync_still_fails_the_log(path):
    """Not a resource error: the state of the bytes is unknown, as in Kafka (log dir offline)."""
    calls = {"n": 0}

    def fsync(fd):
        calls["n"] += 1
        raise OSError(errno.EIO, "injected EIO")

    lg = PartitionLog.open(path)
    lg._fsync = lg._data_sync = fsync
    with pytest.raises(StorageError):
        await lg.append_records([rec(0)])
    with pytest.raises(StorageError):
        lg.append_records([rec(1)])
    assert calls["n"] == 1
    lg._fsync = lg._data_sync = os.fsync
    await lg.close()
    await asyncio.sleep(0)


async def test_a_failed_flush_with_a_roll_waiting_behind_it_leaks_no_fd(path):
    lg = await two_full_segments(path)
    gate = threading.Event()

    def fsync(fd):
        gate.wait(10)
        raise OSError(errno.EIO, "injected EIO")

    lg._fsync = lg._data_sync = fsync
    first = lg.append_records([rec(4, 100)])  # fits: its flush blocks in fsync
    await asyncio.sleep(0.05)
    rolled = lg.append_records([rec(5, 900)])  # rolls while that flush is in flight
    assert len(lg.segments) == 3
    gate.set()
    for result in (first, rolled):
        with pytest.raises(StorageError):
            await result
    await lg.close()
    assert fds_under(path) == []
