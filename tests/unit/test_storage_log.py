"""PartitionLog: appends, reads, rolls, indexes, recovery, group commit, failures."""

from __future__ import annotations

import asyncio
import os
import struct
import threading

import pytest

from storage.batch import build_batch, iter_batches
from storage.errors import CorruptRecordError, InvalidRecordError, OffsetOutOfRangeError, StorageError
from storage.index import OFFSET_ENTRY, TIME_ENTRY
from storage.log import PartitionLog, RecordTooLargeError
from storage.log_timestamps import TimestampOffset
from tests.support.storage_log import files, fill, read_all, rec


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "topic-0")


# ----------------------------------------------------------------- basics
async def test_append_assigns_offsets_and_reads_back_across_rolls(path):
    lg = PartitionLog.open(path, segment_bytes=4000, index_interval_bytes=500)
    r1 = lg.append_records([rec(0), rec(1), rec(2)])
    r2 = lg.append_records([rec(3)])
    assert (r1.base_offset, r1.last_offset, r2.base_offset) == (0, 2, 3)
    await asyncio.gather(r1, r2)
    await fill(lg, 200)
    assert lg.log_end_offset == lg.high_watermark == 204
    assert len(files(path, ".log")) > 5
    assert files(path, ".log")[0] == "00000000000000000000.log"
    recs = read_all(lg)
    assert [r.offset for r in recs] == list(range(204))
    assert [r.key for r in recs] == [b"k%06d" % i for i in range(204)]
    # reads start at the batch containing the offset and return whole batches
    data = lg.read(1, 1)
    batches = list(iter_batches(data))
    assert len(batches) == 1 and batches[0].base_offset == 0 and batches[0].last_offset == 2
    assert lg.read(204) == b""
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(205)
    await lg.close()

    lg = PartitionLog.open(path, segment_bytes=4000, index_interval_bytes=500)
    assert lg.log_end_offset == 204
    assert [r.offset for r in read_all(lg, 150)] == list(range(150, 204))
    await lg.close()


async def test_bad_input_raises_typed_errors_and_leaves_the_log_alone(path):
    lg = PartitionLog.open(path, segment_bytes=2000)
    good = build_batch([rec(0)])
    await lg.append(good)
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        lg.append(bad_crc)
    with pytest.raises(CorruptRecordError):
        lg.append(good + good[:20])  # trailing partial batch
    with pytest.raises(CorruptRecordError):
        lg.append(b"")
    wrong_magic = bytearray(good)
    wrong_magic[16] = 1
    with pytest.raises(InvalidRecordError):
        lg.append(wrong_magic)
    with pytest.raises(RecordTooLargeError):
        lg.append(build_batch([rec(0, size=3000)]))
    assert lg.log_end_offset == 1
    r = lg.append(good + good)  # two batches in one append
    assert (r.base_offset, r.last_offset) == (1, 2)
    await r
    assert [x.offset for x in read_all(lg)] == [0, 1, 2]
    await lg.close()


# ----------------------------------------------------------------- indexes
def expected_entries(log_file: str, interval: int):
    """Kafka's rule, recomputed from the .log file alone."""
    data = open(log_file, "rb").read()
    entries, since, max_ts, max_off, times = [], 0, -1, -1, []
    base = int(os.path.basename(log_file)[:20])
    for b in iter_batches(data):
        if b.max_timestamp > max_ts:
            max_ts, max_off = b.max_timestamp, b.last_offset
        if since > interval:
            entries.append((b.last_offset - base, b.position))
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_off - base))
            since = 0
        since += b.size
    if max_ts >= 0 and (not times or max_ts > times[-1][0]):
        times.append((max_ts, max_off - base))  # final entry on roll/close
    return entries, times


def read_index(path):
    return list(OFFSET_ENTRY.iter_unpack(open(path, "rb").read()))


def read_timeindex(path):
    return list(TIME_ENTRY.iter_unpack(open(path, "rb").read()))


async def test_index_files_follow_kafkas_rule_and_are_rebuilt(path):
    lg = PartitionLog.open(path, segment_bytes=20_000, index_interval_bytes=1000)
    await fill(lg, 400, per_batch=2)
    await lg.close()
    stems = [f[:-4] for f in files(path, ".log")]
    assert len(stems) >= 3
    for stem in stems:
        entries, times = expected_entries(os.path.join(path, stem + ".log"), 1000)
        assert len(entries) > 3
        assert read_index(os.path.join(path, stem + ".index")) == entries
        assert read_timeindex(os.path.join(path, stem + ".timeindex")) == times
    first = os.path.join(path, stems[0])
    good_index = open(first + ".index", "rb").read()
    good_time = open(first + ".timeindex", "rb").read()
    mid = os.path.join(path, stems[1])
    good_mid = open(mid + ".index", "rb").read()

    os.unlink(first + ".index")  # missing
    with open(mid + ".index", "r+b") as f:  # garbage: an entry pointing mid-batch
        f.seek(8)
        f.write(struct.pack(">ii", 3, 7))
    with open(first + ".timeindex", "wb") as f:
        f.write(b"\xff" * 30)  # garbage time index
    lg = PartitionLog.open(path, segment_bytes=20_000, index_interval_bytes=1000)
    assert open(first + ".index", "rb").read() == good_index
    assert open(first + ".timeindex", "rb").read() == good_time
    assert open(mid + ".index", "rb").read() == good_mid
    assert [r.offset for r in read_all(lg)] == list(range(800))
    await lg.close()

    with open(first + ".index", "r+b") as f:  # too short: half the entries gone
        f.truncate(len(good_index) // 16 * 8)
    lg = PartitionLog.open(path, segment_bytes=20_000, index_interval_bytes=1000)
    assert open(first + ".index", "rb").read() == good_index
    await lg.close()


async def test_kafka_style_preallocated_index_tail_is_ignored(path):
    lg = PartitionLog.open(path, segment_bytes=20_000, index_interval_bytes=1000)
    await fill(lg, 300)
    await lg.close()
    first = os.path.join(path, files(path, ".log")[0][:-4])
    good = open(first + ".index", "rb").read()
    with open(first + ".index", "ab") as f:
        f.write(b"\x00" * 8 * 100)  # zero-filled, as Kafka's mmap'ed index before trimming
    lg = PartitionLog.open(path, segment_bytes=20_000, index_interval_bytes=1000)
    assert open(first + ".index", "rb").read() == good
    await lg.close()


# ----------------------------------------------------------------- recovery
async def test_torn_tail_is_truncated_and_earlier_data_kept(path, capsys):
    lg = PartitionLog.open(path)
    await fill(lg, 50)
    await lg.close()
    log_file = os.path.join(path, "00000000000000000000.log")
    size = os.path.getsize(log_file)
    half = build_batch([rec(999)])
    with open(log_file, "ab") as f:
        f.write(struct.pack(">q", 50) + half[8:40])  # half a batch
    lg = PartitionLog.open(path)
    assert os.path.getsize(log_file) == size
    assert lg.log_end_offset == 50
    assert [r.offset for r in read_all(lg)] == list(range(50))
    out = capsys.readouterr().out
    assert "storage.recovery.truncated" in out and "torn" in out
    await lg.append_records([rec(50)])
    assert read_all(lg)[-1].offset == 50
    await lg.close()


async def test_flipped_byte_in_last_batch_cuts_only_that_batch(path):
    lg = PartitionLog.open(path)
    await fill(lg, 20)
    await lg.close()
    log_file = os.path.join(path, "00000000000000000000.log")
    data = bytearray(open(log_file, "rb").read())
    last = list(iter_batches(data))[-1]
    data[last.position + 70] ^= 0x40
    open(log_file, "wb").write(data)
    lg = PartitionLog.open(path)
    assert lg.log_end_offset == 19
    assert os.path.getsize(log_file) == last.position
    assert [r.offset for r in read_all(lg)] == list(range(19))
    await lg.close()


@pytest.mark.parametrize("damage", ["crc", "length", "magic"])
async def test_corrupt_older_segment_drops_everything_after_it(path, damage):
    lg = PartitionLog.open(path, segment_bytes=3000)
    await fill(lg, 100)
    await lg.close()
    logs = files(path, ".log")
    second = os.path.join(path, logs[1])
    data = bytearray(open(second, "rb").read())
    victim = list(iter_batches(data))[3]
    if damage == "crc":
        data[victim.position + 65] ^= 1
    elif damage == "length":
        struct.pack_into(">i", data, victim.position + 8, -1)
    else:
        data[victim.position + 16] = 0
    open(second, "wb").write(data)
    lg = PartitionLog.open(path, segment_bytes=3000)
    assert files(path, ".log") == logs[:2]
    assert lg.log_end_offset == victim.base_offset
    assert [r.offset for r in read_all(lg)] == list(range(victim.base_offset))
    r = lg.append_records([rec(1)])  # appends go on after the cut
    assert r.base_offset == victim.base_offset
    await r
    await lg.close()


async def test_empty_rolled_segment_past_the_end_is_dropped(path):
    """A crash between a roll (file created) and the write of the batches before it."""
    lg = PartitionLog.open(path, segment_bytes=3000)
    await fill(lg, 30)
    await lg.close()
    phantom = os.path.join(path, f"{35:020d}.log")
    open(phantom, "wb").close()
    lg = PartitionLog.open(path, segment_bytes=3000)
    assert not os.path.exists(phantom)
    assert lg.log_end_offset == 30
    assert [r.offset for r in read_all(lg)] == list(range(30))
    r = lg.append_records([rec(30)])
    assert r.base_offset == 30
    await r
    await lg.close()


# ----------------------------------------------------------------- timestamps
async def test_offset_for_timestamp_and_max_timestamp(path):
    lg = PartitionLog.open(path, segment_bytes=3000, index_interval_bytes=300)
    # timestamps 1000 + 2*i, with a dip: the max is at offset 37
    for i in range(80):
        ts = 5000 if i == 37 else 1000 + 2 * i
        lg.append_records([(b"k", b"x" * 50, ts)])
    await lg.flush()
    assert lg.offset_for_timestamp(0) == TimestampOffset(1000, 0)
    assert lg.offset_for_timestamp(1001) == TimestampOffset(1002, 1)
    assert lg.offset_for_timestamp(1050) == TimestampOffset(1050, 25)  # second segment
    assert lg.offset_for_timestamp(1072) == TimestampOffset(1072, 36)
    # the first record in log order with timestamp >= target, as Kafka answers
    assert lg.offset_for_timestamp(1073) == TimestampOffset(5000, 37)
    assert lg.offset_for_timestamp(1158) == TimestampOffset(5000, 37)
    assert lg.offset_for_timestamp(5001) is None
    assert lg.max_timestamp_offset() == TimestampOffset(5000, 37)
    await lg.close()
    lg = PartitionLog.open(path, segment_bytes=3000, index_interval_bytes=300)
    assert lg.offset_for_timestamp(1072) == TimestampOffset(1072, 36)
    assert lg.offset_for_timestamp(1158) == TimestampOffset(5000, 37)
    assert lg.max_timestamp_offset() == TimestampOffset(5000, 37)
    await lg.close()


async def test_offset_for_timestamp_uses_the_time_index_in_a_big_segment(path):
    lg = PartitionLog.open(path, index_interval_bytes=200)
    for i in range(500):
        lg.append_records([(b"k", b"x" * 50, 10 * i)])
    await lg.flush()
    seg = lg.segments[0]
    assert len(seg.time_index) > 100
    for target in (0, 5, 1234, 2500, 4990):
        expect = (target + 9) // 10
        assert lg.offset_for_timestamp(target) == TimestampOffset(10 * expect, expect)
    await lg.close()


# ----------------------------------------------------------------- truncation
async def test_truncate_to_and_delete(path):
    lg = PartitionLog.open(path, segment_bytes=3000)
    await fill(lg, 100)
    n_logs = len(files(path, ".log"))
    await lg.truncate_to(40)
    assert lg.log_end_offset == lg.high_watermark == 40
    assert len(files(path, ".log")) < n_logs
    assert [r.offset for r in read_all(lg)] == list(range(40))
    r = lg.append_records([rec(7)])
    assert r.base_offset == 40
    await r
    await lg.close()
    lg = PartitionLog.open(path, segment_bytes=3000)
    assert lg.log_end_offset == 41
    await lg.delete()
    assert not os.path.exists(path)


# ----------------------------------------------------------------- group commit
class Fsyncs:
    """Counting fsync; can hold the worker until released, or fail."""

    def __init__(self):
        self.calls = 0
        self.gate = threading.Event()
        self.gate.set()
        self.fail = False
        self.called = threading.Event()

    def __call__(self, fd):
        self.gate.wait(10)
        if self.fail:
            raise OSError(5, "injected EIO")
        self.calls += 1
        self.called.set()
        os.fsync(fd)


async def test_one_loop_turn_is_one_write_and_one_fsync(path):
    fs = Fsyncs()
    lg = PartitionLog.open(path, fsync=fs)
    fs.calls = 0
    results = [lg.append_records([rec(i)]) for i in range(50)]
    await asyncio.gather(*results)
    assert fs.calls == 1
    assert lg.high_watermark == 50
    results = [lg.append_records([rec(i)]) for i in range(10)]
    await asyncio.gather(*results)
    assert fs.calls == 2
    await lg.close()


async def test_futures_resolve_only_after_fsync_returned(path):
    fs = Fsyncs()
    lg = PartitionLog.open(path, fsync=fs)
    fs.gate.clear()
    first = [lg.append_records([rec(i)]) for i in range(5)]
    for _ in range(5):
        await asyncio.sleep(0)  # let the flush start and block in fsync
    second = [lg.append_records([rec(i)]) for i in range(5)]  # next group
    await asyncio.wait([r.durable for r in first], timeout=0.05)
    assert not any(r.durable.done() for r in first + second)
    assert lg.high_watermark == 0 and lg.read(0) == b""
    calls = fs.calls
    fs.gate.set()
    await asyncio.gather(*first)
    assert fs.calls >= calls + 1
    await asyncio.gather(*second)
    assert fs.calls == calls + 2  # the second group got its own fsync
    assert lg.high_watermark == 10
    await lg.close()


async def test_failing_fsync_fails_every_waiting_future(path):
    fs = Fsyncs()
    lg = PartitionLog.open(path, fsync=fs)
    await lg.append_records([rec(0)])
    fs.fail = True
    results = [lg.append_records([rec(i)]) for i in range(3)]
    for r in results:
        with pytest.raises(StorageError):
            await r
    assert lg.high_watermark == 1
    with pytest.raises(StorageError):
        lg.append_records([rec(9)])
    fs.fail = False
    await lg.close()
    lg = PartitionLog.open(path)
    assert lg.log_end_offset >= 1 and read_all(lg)[0].offset == 0
    await lg.close()


async def test_policy_none_does_not_fsync_per_flush(path):
    fs = Fsyncs()
    lg = PartitionLog.open(path, fsync=fs, flush_policy="none", flush_interval_ms=60_000)
    fs.calls = 0
    for _ in range(5):
        await lg.append_records([rec(0)])
    assert fs.calls == 0
    assert lg.high_watermark == 5 and len(read_all(lg)) == 5
    await lg.close()
    assert fs.calls >= 1  # close syncs


async def test_policy_none_interval_fsync(path):
    fs = Fsyncs()
    lg = PartitionLog.open(path, fsync=fs, flush_policy="none", flush_interval_ms=1)
    fs.calls = 0
    fs.called.clear()
    await lg.append_records([rec(0)])
    # the interval timer fires on its own, with no further appends
    assert await asyncio.get_running_loop().run_in_executor(None, fs.called.wait, 10)
    assert fs.calls >= 1
    await lg.close()


async def test_flushes_sync_the_data_with_fdatasync_and_everything_else_with_fsync(path):
    lg = PartitionLog.open(path)
    assert lg._fsync is os.fsync and lg._data_sync is os.fdatasync  # the defaults
    await lg.close()
    calls: list[tuple[str, int]] = []
    lg = PartitionLog.open(path, fsync=lambda fd: calls.append(("fsync", fd)))
    assert lg._data_sync is lg._fsync  # an injected fsync does every sync
    await lg.close()
    from storage.flush import FlushJob, run_job

    job = FlushJob(fsync_fds=[11])
    run_job(job, lambda fd: calls.append(("fsync", fd)), lambda fd: calls.append(("data", fd)))
    assert calls[-1] == ("data", 11)
    run_job(FlushJob(fsync_fds=[12]), lambda fd: calls.append(("fsync", fd)))
    assert calls[-1] == ("fsync", 12)  # without data_sync, fsync syncs the data too
