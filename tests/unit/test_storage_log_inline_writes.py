"""Flush policy none: a flush with nothing to fsync (no roll, no sync due) writes from the event loop, without a
worker-thread round trip (issue 32's 1x1 commit path); one that must sync still goes to the worker thread."""

from __future__ import annotations

import asyncio
import errno
from concurrent.futures import ThreadPoolExecutor

import pytest

import storage.flush
from storage.errors import StorageError
from storage.log import PartitionLog
from tests.support.storage_log import read_all, rec


class CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.jobs = 0

    def submit(self, fn, /, *args, **kwargs):
        self.jobs += 1
        return super().submit(fn, *args, **kwargs)


@pytest.fixture
def executor():
    pool = CountingExecutor()
    yield pool
    pool.shutdown()


async def test_policy_none_writes_from_the_loop_without_the_worker_thread(tmp_path, executor):
    lg = PartitionLog.open(str(tmp_path / "p-0"), flush_policy="none", flush_interval_ms=60_000, executor=executor)
    before = executor.jobs
    appended = lg.append_records([rec(0)])
    await asyncio.sleep(0)  # the flush runs at the loop's next turn, and answers there
    assert appended.durable.done() and appended.durable.result() is None
    for i in range(1, 5):
        await lg.append_records([rec(i)])
    assert executor.jobs == before  # no job handed to the worker thread
    assert lg.high_watermark == 5 and [r.offset for r in read_all(lg)] == [0, 1, 2, 3, 4]
    await lg.close()
    reopened = PartitionLog.open(str(tmp_path / "p-0"))
    assert len(read_all(reopened)) == 5  # the bytes are in the file
    await reopened.close()


async def test_policy_fsync_still_uses_the_worker_thread(tmp_path, executor):
    lg = PartitionLog.open(str(tmp_path / "p-0"), flush_policy="fsync", executor=executor)
    before = executor.jobs
    await lg.append_records([rec(0)])
    assert executor.jobs == before + 1
    await lg.close()


async def test_a_failed_inline_write_fails_the_append_and_the_log(tmp_path, executor, monkeypatch):
    lg = PartitionLog.open(str(tmp_path / "p-0"), flush_policy="none", flush_interval_ms=60_000, executor=executor,
                           self_repair=False)
    await lg.append_records([rec(0)])

    def full(fd, buffers, position):
        raise OSError(errno.ENOSPC, "No space left on device (injected)")
    monkeypatch.setattr(storage.flush, "pwrite_all", full)
    with pytest.raises(OSError):
        await lg.append_records([rec(1)])
    with pytest.raises(StorageError):
        lg.append_records([rec(2)])  # failed: nothing more is written until it is repaired or reopened
    monkeypatch.undo()
    await lg.close()
