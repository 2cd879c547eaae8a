"""The share coordinator's runtime over real __share_group_state logs (coordinator/share/runtime/
share_coordinator.py): initialize, write and read answered once durable; a restart reloads the same state from
the log; a snapshot every N updates lets pruning delete what no share partition needs, and the state survives
pruning and a reload; a failed write is answered with its error and the partition reloads what is durable."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.share.runtime.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from coordinator.share.state_store import WriteState
from storage.log import AppendResult
from storage.share_state_records import StateBatch

T = uuid.UUID(int=9)


def _coordinator(root: str, segment_bytes: int = 100 * 1024 * 1024, updates: int = 500) -> ShareCoordinator:
    return ShareCoordinator(ShareCoordinatorSettings(num_partitions=3, segment_bytes=segment_bytes,
                                                     prune_interval_ms=0, updates_per_snapshot=updates),
                            root, lambda topic_id, partition: topic_id == T and 0 <= partition < 4)


async def test_state_is_durable_and_reloads(tmp_path):
    coordinator = _coordinator(str(tmp_path))
    await coordinator.start()
    try:
        assert (await coordinator.initialize("g", T, 0, 1, -1)).error is ErrorCode.none
        read = await coordinator.read("g", T, 0, 0)
        assert read.state.start_offset == -1 and read.state.state_epoch == 1
        written = await coordinator.write(WriteState("g", T, 0, 1, 0, 10, (StateBatch(12, 14, 2, 1),), 3))
        assert written.error is ErrorCode.none
        assert (await coordinator.write(WriteState("g", T, 9, 1, 0, 10))).error is ErrorCode.invalid_request
        unknown = await coordinator.read("g", uuid.uuid4(), 0, 0)
        assert unknown.error is ErrorCode.unknown_topic_or_partition
    finally:
        await coordinator.stop()
    again = _coordinator(str(tmp_path))
    await again.start()
    try:
        state = (await again.read("g", T, 0, 0)).state
        assert (state.start_offset, state.state_batches, state.leader_epoch) == (10, (StateBatch(12, 14, 2, 1),), 0)
        assert (await again.summary("g", T, 0)).state.delivery_complete_count == 3
        assert (await again.delete("g", T, 0)).error is ErrorCode.none
        assert (await again.read("g", T, 0, 0)).state.start_offset == -1
    finally:
        await again.stop()


async def test_pruning_deletes_what_no_share_partition_needs(tmp_path):
    coordinator = _coordinator(str(tmp_path), segment_bytes=2048, updates=5)
    await coordinator.start()
    try:
        await coordinator.initialize("g", T, 1, 0, 0)
        for i in range(60):
            answer = await coordinator.write(WriteState("g", T, 1, 0, 0, i, (StateBatch(i, i, 2, 1),), i))
            assert answer.error is ErrorCode.none
        part = coordinator.partition_of("g", T, 1)
        end = part.log.high_watermark
        deleted = await coordinator.prune()
        assert deleted >= 1 and part.log.log_start_offset > 0
        assert part.log.log_start_offset <= part.store.snapshot_offsets[("g", T, 1)] < end
    finally:
        await coordinator.stop()
    again = _coordinator(str(tmp_path), segment_bytes=2048, updates=5)
    await again.start()
    try:
        state = (await again.read("g", T, 1, 0)).state
        assert state.start_offset == 59 and state.state_batches == (StateBatch(59, 59, 2, 1),)
    finally:
        await again.stop()


async def test_a_failed_write_is_answered_and_the_partition_reloads(tmp_path):
    coordinator = _coordinator(str(tmp_path))
    await coordinator.start()
    try:
        await coordinator.initialize("g", T, 2, 0, 5)
        part = coordinator.partition_of("g", T, 2)

        log_append = part.log.append

        def refused(*_args, **_kwargs):
            raise OSError(28, "No space left on device")

        def lost(*_args, **_kwargs):  # offsets handed out, then the fsync fails: the log keeps nothing of it
            durable = asyncio.get_running_loop().create_future()
            durable.set_exception(OSError(5, "Input/output error"))
            end = part.log.high_watermark
            return AppendResult(end, end, durable)

        for broken in (refused, lost):
            part.log.append = broken  # type: ignore[method-assign]
            answer = await coordinator.write(WriteState("g", T, 2, 0, 0, 7))
            assert answer.error is not ErrorCode.none
            part.log.append = log_append  # type: ignore[method-assign]
            assert (await coordinator.read("g", T, 2, 0)).state.start_offset == 5  # reloaded: the write is gone
        assert (await coordinator.write(WriteState("g", T, 2, 0, 0, 7))).error is ErrorCode.none
        assert (await coordinator.read("g", T, 2, 0)).state.start_offset == 7
    finally:
        await coordinator.stop()


pytestmark = pytest.mark.asyncio
