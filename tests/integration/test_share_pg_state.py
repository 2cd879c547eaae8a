"""A __share_group_state partition over its PostgreSQL log (cluster mode) against a real PostgreSQL: the share
coordinator that took it writes through it and prunes it (the log start moved in kc_partitions), the next owner
(a higher ownership epoch) reloads the same state from the rows alone, and the former owner's late write is
fenced: answered with an error, never a success, and invisible to the new owner."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from coordinator.share.runtime.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from coordinator.share.state_store import WriteState
from storage.pg import ownership
from storage.pg.connect import open_pool
from storage.pg.pg_log import PgPartitionLog
from storage.share_state_records import StateBatch

STATE_TOPIC = uuid.UUID("00000000-0000-0000-0000-00000000005a")
T = uuid.UUID(int=9)


def _coordinator() -> ShareCoordinator:
    return ShareCoordinator(ShareCoordinatorSettings(num_partitions=1, prune_interval_ms=0, updates_per_snapshot=2,
                                                     segment_bytes=1024),
                            "unused", lambda topic_id, partition: topic_id == T and partition == 0)


async def _owned_by(pool, node: int, epoch: int) -> None:
    await pool.execute("UPDATE kc_partitions SET owner = $1, epoch = $2 WHERE topic_id = $3", node, epoch,
                       STATE_TOPIC)


async def test_the_next_owner_reloads_the_state_and_the_former_owner_is_fenced(pg_url, tmp_path):
    pool = await open_pool(pg_url, max_size=4)
    first, second = _coordinator(), _coordinator()
    try:
        await ownership.ensure_partitions(pool, STATE_TOPIC, 1)
        await _owned_by(pool, 1, 1)
        await first.take(0, await PgPartitionLog.open(pool, STATE_TOPIC, 0, 1, str(tmp_path / "node1")))
        assert (await first.initialize("g", T, 0, 1, 0)).error is ErrorCode.none
        for i in range(12):
            answer = await first.write(WriteState("g", T, 0, 1, 1, i, (StateBatch(i, i, 2, 1),), i))
            assert answer.error is ErrorCode.none
        await first.prune()
        log_start = await pool.fetchval("SELECT log_start FROM kc_partitions WHERE topic_id = $1", STATE_TOPIC)
        assert log_start > 0  # what no share partition needs any more is gone from PostgreSQL too
        # another node takes the partition: the state comes back from the rows alone
        await _owned_by(pool, 2, 2)
        await second.take(0, await PgPartitionLog.open(pool, STATE_TOPIC, 0, 2, str(tmp_path / "node2")))
        state = (await second.read("g", T, 0, 1)).state
        assert (state.start_offset, state.state_batches) == (11, (StateBatch(11, 11, 2, 1),))
        # the former owner, not told yet, writes late: refused by the epoch fence, never a success; NOT_COORDINATOR
        # as Kafka's coordinator runtime answers for a partition it lost (the persister asks the new owner)
        late = await first.write(WriteState("g", T, 0, 1, 1, 40, (StateBatch(40, 40, 2, 1),), 1))
        assert late.error is ErrorCode.not_coordinator
        again = _coordinator()
        await again.take(0, await PgPartitionLog.open(pool, STATE_TOPIC, 0, 2, str(tmp_path / "node3")))
        assert (await again.read("g", T, 0, 1)).state.start_offset == 11
        await again.stop()
    finally:
        await first.stop()
        await second.stop()
        await pool.close()
