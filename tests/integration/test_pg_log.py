"""storage/pg/pg_log.py (PgPartitionLog) and storage/pg/batches.py against a real PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import asyncpg
import pytest

from storage.batch import assign_offsets, build_batch, iter_batches
from storage.errors import OffsetOutOfRangeError
from storage.latest import LatestRecords
from storage.log_compaction import CompactionPolicy
from storage.pg import batches, leases, ownership
from storage.pg.batches import BatchRow
from storage.pg.connect import open_pool
from storage.pg.errors import FencedError, StoreUnavailableError
from storage.pg.pg_log import PgPartitionLog

TOPIC = uuid.UUID("00000000-0000-0000-0000-0000000000c1")
EPOCH = 1


@pytest.fixture
async def pool(pg_url):
    pool = await open_pool(pg_url, max_size=4)
    await ownership.ensure_partitions(pool, TOPIC, 1)
    await pool.execute("UPDATE kc_partitions SET owner = 1, epoch = $1", EPOCH)
    yield pool
    await pool.close()


@pytest.fixture
async def plog(pool, tmp_path):
    async with opened(pool, tmp_path / "replica") as log_:
        yield log_


@contextlib.asynccontextmanager
async def opened(pool, path, **options):
    """PgPartitionLog.open of the test partition at EPOCH, closed at the end of the block."""
    log_ = await PgPartitionLog.open(pool, TOPIC, 0, EPOCH, str(path), **options)
    try:
        yield log_
    finally:
        await log_.close()


def one(i: int, key: bytes | None = None) -> bytes:
    return build_batch([(key if key is not None else b"k%d" % i, b"v%d" % i, 1_700_000_000_000 + i)])


async def stored(pool) -> list[asyncpg.Record]:
    """kc_batches rows of the partition, oldest first, with the id of the transaction that wrote each."""
    return await pool.fetch("SELECT base_offset, last_offset, max_timestamp, data, xmin::text::bigint AS xid "
                            "FROM kc_batches WHERE topic_id = $1 AND partition = 0 ORDER BY base_offset", TOPIC)


async def blocked_on_lock(pool, query_part: str) -> int:
    """The pid of the backend running a statement containing ``query_part``, once it waits for a lock."""
    for _ in range(3000):  # a hang guard (30 s), not a timing bound: the wait is certain to come
        pid = await pool.fetchval("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                  "AND position($1 in query) > 0", query_part)
        if pid is not None:
            return pid
        await asyncio.sleep(0.01)
    raise AssertionError(f"no statement with {query_part!r} waits for a lock")


@contextlib.asynccontextmanager
async def holding_the_partition_row(pool):
    """Another connection holds the partition row FOR UPDATE (appends wait) until ``release()``
    is awaited or the block ends, even when an assertion fails inside."""
    locker = await pool.acquire()
    tx = locker.transaction()
    await tx.start()
    await locker.execute("SELECT 1 FROM kc_partitions WHERE topic_id = $1 FOR UPDATE", TOPIC)
    released = False

    async def release() -> None:
        nonlocal released
        if not released:
            released = True
            await tx.rollback()

    try:
        yield release
    finally:
        await release()
        await pool.release(locker)


async def test_appends_of_one_loop_turn_commit_in_one_transaction(pool, plog):
    results = [plog.append(one(i)) for i in range(10)]
    assert [r.base_offset for r in results] == list(range(10))
    await asyncio.gather(*(r.durable for r in results))
    rows = await stored(pool)
    assert [(r["base_offset"], r["last_offset"]) for r in rows] == [(i, i) for i in range(10)]
    assert len({r["xid"] for r in rows}) == 1
    assert plog.transactions == 1
    assert [r["max_timestamp"] for r in rows] == [1_700_000_000_000 + i for i in range(10)]


async def test_appends_arriving_during_a_commit_form_the_next_one_in_order(pool, plog):
    first = plog.append(one(0))
    await asyncio.sleep(0)  # the first transaction starts
    assert plog.flushing
    later = [plog.append(build_batch([(b"a", b"1", 5), (b"b", b"2", 9)])), plog.append(one(3))]
    assert [(r.base_offset, r.last_offset) for r in later] == [(1, 2), (3, 3)]
    await asyncio.gather(first.durable, *(r.durable for r in later))
    rows = await stored(pool)
    assert [(r["base_offset"], r["last_offset"], r["max_timestamp"]) for r in rows] == [
        (0, 0, 1_700_000_000_000), (1, 2, 9), (3, 3, 1_700_000_000_003)]
    assert rows[0]["xid"] < rows[1]["xid"] == rows[2]["xid"]
    assert plog.transactions == 2
    assert [b.base_offset for b in iter_batches(plog.read(0))] == [0, 1, 3]


async def test_high_watermark_moves_only_after_commit(pool, plog):
    await plog.append(one(0))
    async with holding_the_partition_row(pool) as release:
        pending = plog.append(one(1))
        await blocked_on_lock(pool, "kc_batches")
        await plog._replica.flush()  # the replica holds the bytes; readers must not see them
        assert plog._replica.high_watermark == 2
        assert plog.high_watermark == 1
        assert [b.base_offset for b in iter_batches(plog.read(0))] == [0]
        assert plog.read(1) == b""
        assert not pending.durable.done()
        await release()
        await pending
    assert plog.high_watermark == 2
    assert [b.base_offset for b in iter_batches(plog.read(0))] == [0, 1]


async def test_a_bumped_epoch_fences_the_next_append(pool, plog):
    await plog.append(one(0))
    await pool.execute("UPDATE kc_partitions SET epoch = epoch + 1")
    result = plog.append(one(1))
    with pytest.raises(FencedError):
        await result
    assert isinstance(plog.failed, FencedError)
    with pytest.raises(FencedError):
        plog.append(one(2))
    assert [r["base_offset"] for r in await stored(pool)] == [0]
    assert plog.high_watermark == 1 and plog.read(1) == b""


async def test_an_epoch_bump_waits_for_the_append_in_flight_and_the_new_owner_sees_it(pool, tmp_path):
    writer = await pool.acquire()
    tx = writer.transaction()
    await tx.start()
    await batches.append(writer, TOPIC, 0, EPOCH, [BatchRow(0, 0, 7, one(0))])
    await leases.register(pool, 2, [], None, 60_000)
    bump = asyncio.ensure_future(ownership.acquire(pool, TOPIC, 0, 2, [2]))
    await blocked_on_lock(pool, "UPDATE kc_partitions AS p")
    assert not bump.done()
    await tx.commit()
    await pool.release(writer)
    assert await bump == EPOCH + 1
    new_owner = await PgPartitionLog.open(pool, TOPIC, 0, EPOCH + 1, str(tmp_path / "new"))
    try:
        assert new_owner.high_watermark == 1
        assert bytes(new_owner.read(0)) == one(0)
    finally:
        await new_owner.close()
    with pytest.raises(FencedError):
        await PgPartitionLog.open(pool, TOPIC, 0, EPOCH, str(tmp_path / "old"))


async def test_a_connection_killed_mid_flight_fails_every_waiting_append_and_reopening_recovers(pool, plog, tmp_path):
    committed = [plog.append(one(i)) for i in range(3)]
    await asyncio.gather(*(r.durable for r in committed))
    async with holding_the_partition_row(pool):
        in_flight = plog.append(one(3))
        pid = await blocked_on_lock(pool, "kc_batches")
        queued = [plog.append(one(i)) for i in (4, 5)]
        assert await pool.fetchval("SELECT pg_terminate_backend($1)", pid)
        outcomes = await asyncio.gather(in_flight.durable, *(r.durable for r in queued), return_exceptions=True)
        assert all(isinstance(o, StoreUnavailableError) for o in outcomes), outcomes
        assert isinstance(plog.failed, StoreUnavailableError)
        with pytest.raises(StoreUnavailableError):
            plog.append(one(6))
        assert plog.high_watermark == 3 and plog.read(3) == b""
    async with opened(pool, plog.path) as reopened:
        rows = await stored(pool)
        expected = b"".join(_renumbered(one(i), i) for i in range(3))
        assert b"".join(bytes(r["data"]) for r in rows) == reopened.read(0) == expected
        assert reopened.log_end_offset == reopened.high_watermark == 3
        await reopened.append(one(3))
        assert [r["base_offset"] for r in await stored(pool)] == [0, 1, 2, 3]


async def test_kafka_bytes_round_trip_through_the_loader_reader(pool, plog, tmp_path):
    expected = {}
    for i in range(50):
        key, value = b"group-%d" % (i % 7), b"offset-%d" % i
        expected[key] = value
        plog.append(build_batch([(key, value, i)]))
    await plog.flush()
    async with opened(pool, tmp_path / "again", chunk_bytes=300) as reopened:
        fold = LatestRecords()
        offset = 0
        while offset < reopened.high_watermark:
            offset = fold.add(reopened.read(offset, 500))
        assert offset == 50 and fold.records == 50
        assert fold.latest == expected


async def test_open_keeps_offsets_gaps_and_the_log_start(pool, tmp_path):
    rows = [BatchRow(0, 1, 1, build_batch([(b"a", b"1", 1), (b"b", b"2", 1)], base_offset=0)),
            BatchRow(5, 5, 2, one(5)), BatchRow(6, 6, 2, one(6)), BatchRow(9, 9, 3, one(9))]
    rows = [r._replace(data=_renumbered(r.data, r.base_offset)) for r in rows]
    async with pool.acquire() as conn:
        await batches.append(conn, TOPIC, 0, EPOCH, rows)
        await batches.set_log_start(conn, TOPIC, 0, EPOCH, 1)
    async with opened(pool, tmp_path / "r", chunk_bytes=100) as log_:
        assert (log_.log_start_offset, log_.high_watermark, log_.log_end_offset) == (1, 10, 10)
        assert [b.base_offset for b in iter_batches(log_.read(1))] == [0, 5, 6, 9]
        assert [b.base_offset for b in iter_batches(log_.read(7))] == [9]
        with pytest.raises(OffsetOutOfRangeError):
            log_.read(0)
        assert (await log_.append(one(10))) is None
        assert (await stored(pool))[-1]["base_offset"] == 10


async def test_all_rows_deleted_keeps_the_end(pool, plog, tmp_path):
    for i in range(4):
        plog.append(one(i))
    await plog.flush()
    plog.advance_log_start(4)
    await plog.checkpoint_log_start()
    assert await stored(pool) == []
    assert await pool.fetchval("SELECT log_start FROM kc_partitions") == 4
    async with opened(pool, tmp_path / "r") as reopened:
        assert (reopened.log_start_offset, reopened.log_end_offset) == (4, 4)
        assert (await reopened.append(one(4))) is None


async def test_delete_records_and_retention_delete_rows_below_fenced(pool, tmp_path):
    async with opened(pool, tmp_path / "r", segment_bytes=200) as log_:
        for i in range(6):
            await log_.append(one(i))
        assert len(log_.segment_infos()) > 2
        assert log_.advance_log_start(1) == 1
        await log_.checkpoint_log_start()
        assert [r["base_offset"] for r in await stored(pool)] == [1, 2, 3, 4, 5]
        deleted = await log_.delete_oldest(2, None)
        assert deleted == 2
        start = log_.log_start_offset
        assert start > 1
        assert [r["base_offset"] for r in await stored(pool)] == list(range(start, 6))
        assert await pool.fetchval("SELECT log_start FROM kc_partitions") == start
        await pool.execute("UPDATE kc_partitions SET epoch = epoch + 1")
        with pytest.raises(FencedError):
            await log_.delete_oldest(1, None)
        assert [r["base_offset"] for r in await stored(pool)] == list(range(start, 6))
        assert isinstance(log_.failed, FencedError)


async def test_compaction_replaces_the_rows_of_the_cleaned_range(pool, tmp_path):
    async with opened(pool, tmp_path / "r", segment_bytes=300) as log_:
        for i in range(12):
            await log_.append(one(i, key=b"k%d" % (i % 2)))
        stats = await log_.compact(CompactionPolicy(min_cleanable_dirty_ratio=0.0), 0, None)
        assert stats is not None and stats.records_kept < stats.records_read
        async with opened(pool, tmp_path / "again") as reopened:
            kept = everything(log_)
            assert everything(reopened) == kept
            assert [b.base_offset for b in iter_batches(kept)] == [6, 7, 8, 9, 10, 11]
            assert reopened.log_end_offset == 12
        assert b"".join(bytes(r["data"]) for r in await stored(pool)) == kept


def everything(log_) -> bytes:
    """Every batch below the high watermark, read segment by segment."""
    out, offset = b"", log_.log_start_offset
    while offset < log_.high_watermark:
        data = log_.read(offset)
        out += data
        offset = list(iter_batches(data))[-1].next_offset
    return out


def _renumbered(data: bytes, base: int) -> bytes:
    buf = bytearray(data)
    assign_offsets(buf, base)
    return bytes(buf)


async def test_an_empty_partition_starts_anew_at_an_offset_in_postgresql_and_in_its_replica(pool, tmp_path):
    async with opened(pool, tmp_path / "a") as log_:
        await log_.start_empty_at(500)
        assert (log_.log_start_offset, log_.log_end_offset, log_.high_watermark) == (500, 500, 500)
        assert await pool.fetchval("SELECT log_start FROM kc_partitions WHERE topic_id = $1", TOPIC) == 500
        await log_.append(one(1))
        assert [r["base_offset"] for r in await stored(pool)] == [500]
        with pytest.raises(ValueError):  # it holds a record now
            await log_.start_empty_at(900)
    async with opened(pool, tmp_path / "b") as again:  # the next owner's replica starts there too
        assert (again.log_start_offset, again.log_end_offset) == (500, 501)


async def test_the_transaction_state_log_compacts_a_postgresql_log_and_replaces_its_rows(pool, tmp_path):
    """Cluster mode's __transaction_state logs are PgPartitionLogs (PartitionHooks: TxnStateLog.adopt); the
    transaction coordinator's periodic compaction cleans their replica's closed segments and replaces the rows."""
    from coordinator.transactions.runtime.state_log import TxnStateLog
    from storage.txn_log_records import TxnLogValue

    def value(epoch: int) -> TxnLogValue:
        return TxnLogValue(producer_id=7, producer_epoch=epoch, transaction_timeout_ms=60_000, transaction_status=0,
                           transaction_partitions=(), transaction_last_update_timestamp_ms=1000 + epoch,
                           transaction_start_timestamp_ms=-1)

    logs = TxnStateLog(str(tmp_path / "local"))
    async with opened(pool, tmp_path / "r", segment_bytes=1024) as log_:
        logs.adopt(0, log_)
        for epoch in range(40):
            await logs.append(0, "same", value(epoch))
        rows = len(await stored(pool))
        assert await logs.compact(now_ms=10**13, policy=CompactionPolicy(min_cleanable_dirty_ratio=0.0)) == 1
        assert len(await stored(pool)) < rows / 2
        async with opened(pool, tmp_path / "again") as reopened:
            assert everything(reopened) == everything(log_)
            again = TxnStateLog(str(tmp_path / "other"))
            again.adopt(0, reopened)
            assert await again.load(0) == {"same": value(39)}
