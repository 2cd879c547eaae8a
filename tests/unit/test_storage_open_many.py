"""PartitionLog.open_many: a start's partition logs opened together, each exactly as PartitionLog.open opens it,
their file work (and its fsyncs) concurrent."""

from __future__ import annotations

import os
import threading

import pytest

from storage.log import PartitionLog
from tests.support.storage_log import fill, read_all


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _synced():
    """An fsync that records the path of each fd it syncs (its target, through /proc/self/fd)."""
    seen: list[str] = []

    def fsync(fd: int) -> None:
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        os.fsync(fd)

    return fsync, seen


async def test_new_partitions_are_created_and_their_directories_synced_as_one_by_one(tmp_path):
    paths = [str(tmp_path / f"t-{i}") for i in range(6)]
    fsync, seen = _synced()
    logs = PartitionLog.open_many(paths, fsync=fsync)
    assert [lg.path for lg in logs] == paths
    assert sorted(seen) == sorted(paths)  # each new directory fsynced once, as PartitionLog.open does
    for path in paths:
        assert os.listdir(path) == ["00000000000000000000.log"]
    for lg in logs:
        assert (lg.log_start_offset, lg.log_end_offset) == (0, 0)
        await lg.close()


async def test_reopened_partitions_recover_as_open_recovers_them(tmp_path):
    paths = [str(tmp_path / f"t-{i}") for i in range(4)]
    for i, path in enumerate(paths):
        lg = PartitionLog.open(path, segment_bytes=4000, index_interval_bytes=500)
        await fill(lg, 40 * i)
        await lg.close()

    def state(lg: PartitionLog) -> tuple:
        return (lg.log_start_offset, lg.log_end_offset, [r.offset for r in read_all(lg)],
                [(s.base_offset, s.size, s.next_offset) for s in lg.segments])

    one_by_one = []
    for path in paths:
        lg = PartitionLog.open(path, segment_bytes=4000, index_interval_bytes=500)
        one_by_one.append(state(lg))
        await lg.close()
    many = PartitionLog.open_many(paths, segment_bytes=4000, index_interval_bytes=500)
    assert [state(lg) for lg in many] == one_by_one
    assert [s[1] for s in one_by_one] == [0, 40, 80, 120] and len(many[3].segments) > 1  # rolled: old segments too
    for lg in many:
        await lg.close()


def test_the_directories_are_opened_concurrently(tmp_path):
    """Two fsyncs in flight at once: the second arrival releases the first. One by one, the first would wait
    out the timeout and the test fail."""
    together = threading.Event()
    inside = []
    lock = threading.Lock()

    def fsync(fd: int) -> None:
        with lock:
            inside.append(fd)
            if len(inside) >= 2:
                together.set()
        together.wait(10)
        with lock:
            inside.remove(fd)
        os.fsync(fd)

    logs = PartitionLog.open_many([str(tmp_path / f"t-{i}") for i in range(4)], fsync=fsync)
    assert together.is_set()
    for lg in logs:
        lg.close_sync()


def test_one_directory_that_cannot_be_opened_fails_them_all_and_leaks_no_file(tmp_path):
    paths = [str(tmp_path / f"t-{i}") for i in range(5)]
    (tmp_path / "t-3").write_bytes(b"a file where a partition directory should be")
    before = _fd_count()
    with pytest.raises(OSError):
        PartitionLog.open_many(paths)
    assert _fd_count() == before
