"""Produce through a failed write (a full disk): the failed batch answers KAFKA_STORAGE_ERROR, its
retry is never acknowledged before it is written (not taken for a duplicate of the failed batch), and
once the log repaired itself (storage/log_repair.py) the retry is appended at the next good offset."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from storage.batch import decode_records, iter_batches
from storage.log_repair import RepairMixin
from tests.support.data_plane import Plane
from tests.support.storage_log import Disk, writable
from tests.unit.test_data_plane_produce import init_pid, seq_batch


async def test_a_retry_of_a_failed_batch_is_written_again_not_acknowledged_as_a_duplicate(tmp_path, monkeypatch):
    disk = Disk(monkeypatch)
    held: list = []  # repairs held back, to retry inside the window between the failure and the repair
    start_repair = RepairMixin._start_repair
    monkeypatch.setattr(RepairMixin, "_start_repair", lambda lg: held.append(lg))
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        pid = (await init_pid(plane)).producer_id
        log = plane.data.partition("t", 0).log
        assert (await plane.produce("t", 0, seq_batch(pid, 0, 0))).base_offset == 0
        disk.full = True
        failed = await plane.produce("t", 0, seq_batch(pid, 0, 2))
        assert failed.error_code == ErrorCode.kafka_storage_error
        disk.full = False
        retry = await plane.produce("t", 0, seq_batch(pid, 0, 2))  # the same sequence: must not be acked
        assert retry.error_code == ErrorCode.kafka_storage_error
        assert log.high_watermark == 2
        monkeypatch.setattr(RepairMixin, "_start_repair", start_repair)
        for lg in held:
            lg._repair_timer = None
            lg._start_repair()
        await writable(log)
        again = await plane.produce("t", 0, seq_batch(pid, 0, 2))
        assert (again.error_code, again.base_offset) == (ErrorCode.none, 2)
        dup = await plane.produce("t", 0, seq_batch(pid, 0, 2))  # now a real duplicate: its first offset
        assert (dup.error_code, dup.base_offset, log.log_end_offset) == (ErrorCode.none, 2, 4)
        values = [r.value for b in iter_batches(log.read(0)) for r in decode_records(b)]
        assert values == [b"v0", b"v1", b"v2", b"v3"]
