"""storage/pg/ownership.py against a real PostgreSQL: owner + epoch move safely under races."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from storage.pg import leases, ownership
from storage.pg.connect import open_pool
from storage.pg.notify import CHANNEL
from storage.pg.ownership import PartitionRow

TOPIC = uuid.UUID("00000000-0000-0000-0000-00000000000a")
OTHER = uuid.UUID("00000000-0000-0000-0000-00000000000b")
LIVE_MS = 60_000


@pytest.fixture
async def pool(pg_url):
    pool = await open_pool(pg_url, max_size=8)
    await ownership.ensure_partitions(pool, TOPIC, 3)
    yield pool
    await pool.close()


async def expire(pool, node_id: int) -> None:
    """Put the node's lease in the past by PostgreSQL's clock."""
    await pool.execute("UPDATE kc_nodes SET expires_at = clock_timestamp() - interval '1 second' WHERE node_id = $1",
                       node_id)  # fmt: skip


async def test_ensure_partitions_adds_only_missing_rows(pool):
    assert await ownership.ensure_partitions(pool, TOPIC, 3) == 0
    assert await ownership.ensure_partitions(pool, TOPIC, 5) == 2
    assert await ownership.ensure_partitions(pool, OTHER, 1) == 1
    assert await ownership.partitions(pool, TOPIC) == [PartitionRow(TOPIC, p, None, 0, 0) for p in range(5)]
    assert [(row.topic_id, row.partition) for row in await ownership.partitions(pool)] == [
        *((TOPIC, p) for p in range(5)),
        (OTHER, 0),
    ]


async def test_acquire_an_unowned_partition_then_release_it(pool):
    await leases.register(pool, 1, [], None, LIVE_MS)
    assert await ownership.acquire(pool, TOPIC, 0, 1, [1]) == 1
    assert (await ownership.partitions(pool, TOPIC))[0] == PartitionRow(TOPIC, 0, 1, 1, 0)
    assert not await ownership.release(pool, TOPIC, 0, 2, 1)  # not the owner
    assert not await ownership.release(pool, TOPIC, 0, 1, 0)  # an old epoch
    assert await ownership.release(pool, TOPIC, 0, 1, 1)
    assert (await ownership.partitions(pool, TOPIC))[0] == PartitionRow(TOPIC, 0, None, 1, 0)
    assert not await ownership.release(pool, TOPIC, 0, 1, 1)  # already released
    assert await ownership.acquire(pool, TOPIC, 0, 1, [1]) == 2


async def test_acquire_refuses_a_partition_of_a_live_node_and_takes_one_of_a_dead_node(pool):
    for node_id in (1, 2):
        await leases.register(pool, node_id, [], None, LIVE_MS)
    assert await ownership.acquire(pool, TOPIC, 0, 1, [1, 2]) == 1
    assert await ownership.acquire(pool, TOPIC, 0, 2, [1, 2]) is None
    assert await ownership.acquire(pool, TOPIC, 0, 2, [2]) is None  # live by PostgreSQL's clock
    await expire(pool, 1)
    assert await ownership.acquire(pool, TOPIC, 0, 2, [1, 2]) is None  # still live in the caller's view
    assert await ownership.acquire(pool, TOPIC, 0, 2, [2]) == 2
    assert (await ownership.partitions(pool, TOPIC))[0].owner == 2


async def test_acquire_takes_a_partition_of_a_node_without_a_row(pool):
    await leases.register(pool, 2, [], None, LIVE_MS)
    await pool.execute("UPDATE kc_partitions SET owner = 7, epoch = 4 WHERE topic_id = $1 AND partition = 1", TOPIC)
    assert await ownership.acquire(pool, TOPIC, 1, 2, [2]) == 5


async def test_a_node_whose_lease_lapsed_acquires_nothing(pool):
    await leases.register(pool, 1, [], None, LIVE_MS)
    await expire(pool, 1)
    assert await ownership.acquire(pool, TOPIC, 0, 1, [1]) is None
    assert await ownership.acquire(pool, TOPIC, 0, 3, [3]) is None  # never registered
    assert (await ownership.partitions(pool, TOPIC))[0] == PartitionRow(TOPIC, 0, None, 0, 0)


async def test_the_owner_retakes_its_partition_with_a_new_epoch(pool):
    await leases.register(pool, 1, [], None, LIVE_MS)
    assert await ownership.acquire(pool, TOPIC, 2, 1, [1]) == 1
    assert await ownership.acquire(pool, TOPIC, 2, 1, [1]) == 2
    assert not await ownership.release(pool, TOPIC, 2, 1, 1)  # the fenced epoch


async def test_acquire_of_a_missing_partition_is_refused(pool):
    await leases.register(pool, 1, [], None, LIVE_MS)
    assert await ownership.acquire(pool, OTHER, 0, 1, [1]) is None


async def test_a_racing_acquire_waits_for_the_winner_and_loses(pool):
    for node_id in (1, 2):
        await leases.register(pool, node_id, [], None, LIVE_MS)
    async with pool.acquire() as first, pool.acquire() as second:
        transaction = first.transaction()
        await transaction.start()
        assert await ownership.acquire(first, TOPIC, 0, 1, [1, 2]) == 1  # row locked, not committed
        racing = asyncio.create_task(ownership.acquire(second, TOPIC, 0, 2, [1, 2]))
        while not racing.done() and not await pool.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"):
            await asyncio.sleep(0.01)  # until the second UPDATE waits on the row
        await transaction.commit()
        assert await racing is None
    assert (await ownership.partitions(pool, TOPIC))[0] == PartitionRow(TOPIC, 0, 1, 1, 0)


async def test_many_nodes_racing_for_one_partition_one_wins(pool):
    nodes = range(1, 7)
    for node_id in nodes:
        await leases.register(pool, node_id, [], None, LIVE_MS)
    epochs = await asyncio.gather(*(ownership.acquire(pool, TOPIC, 1, node_id, nodes) for node_id in nodes))
    assert sorted(epochs, key=lambda epoch: epoch or 0) == [None] * 5 + [1]
    winner = nodes[epochs.index(1)]
    assert (await ownership.partitions(pool, TOPIC))[1] == PartitionRow(TOPIC, 1, winner, 1, 0)


async def test_acquire_many_takes_what_it_may_in_one_statement_and_leaves_out_the_rest(pool):
    for node_id in (1, 2, 3):
        await leases.register(pool, node_id, [], None, LIVE_MS)
    assert await ownership.acquire(pool, TOPIC, 1, 2, [1, 2, 3]) == 1  # a live node's
    assert await ownership.acquire(pool, TOPIC, 2, 3, [1, 2, 3]) == 1  # a node about to die
    await expire(pool, 3)
    keys = [(TOPIC, 0), (TOPIC, 1), (TOPIC, 2), (OTHER, 0)]  # free, live other's, dead one's, no such row
    assert await ownership.acquire_many(pool, keys, 1, [1, 2]) == {(TOPIC, 0): 1, (TOPIC, 2): 2}
    assert [(row.owner, row.epoch) for row in await ownership.partitions(pool, TOPIC)] == [(1, 1), (2, 1), (1, 2)]
    assert await ownership.acquire_many(pool, [], 1, [1, 2]) == {}


async def test_acquire_many_racing_over_overlapping_rows_in_opposite_orders_gives_each_row_one_owner(pool):
    await ownership.ensure_partitions(pool, TOPIC, 40)
    for node_id in (1, 2):
        await leases.register(pool, node_id, [], None, LIVE_MS)
    keys = [(TOPIC, p) for p in range(40)]
    async with pool.acquire() as first, pool.acquire() as second:
        for connection in (first, second):  # a plan that visits the rows in the order asked for: nested loops
            await connection.execute("SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_seqscan = off")
        for _ in range(5):  # PostgreSQL would report a deadlock as an error here
            won = await asyncio.gather(ownership.acquire_many(first, keys, 1, [1, 2]),
                                       ownership.acquire_many(second, keys[::-1], 2, [1, 2]))
            assert sorted([*won[0], *won[1]]) == keys  # every row to exactly one of them
            await pool.execute("UPDATE kc_partitions SET owner = NULL")
        await first.execute("RESET ALL"), await second.execute("RESET ALL")


async def test_changes_notify_partitions(pool, pg_url):
    listener = await asyncpg.connect(pg_url)
    payloads: asyncio.Queue[str] = asyncio.Queue()
    await listener.add_listener(CHANNEL, lambda *args: payloads.put_nowait(args[3]))
    try:
        await leases.register(pool, 1, [], None, LIVE_MS)
        assert await asyncio.wait_for(payloads.get(), 10) == "nodes"
        assert await ownership.ensure_partitions(pool, OTHER, 1) == 1
        assert await ownership.acquire(pool, OTHER, 0, 1, [1]) == 1
        assert await ownership.release(pool, OTHER, 0, 1, 1)
        assert await ownership.acquire(pool, OTHER, 0, 99, [1]) is None  # refused: no notification
        await ownership.ensure_partitions(pool, OTHER, 3)
        assert len(await ownership.acquire_many(pool, [(OTHER, 1), (OTHER, 2)], 1, [1])) == 2  # one notification
        await ownership.ensure_partitions(pool, OTHER, 1)  # nothing new: no notification
        await leases.deregister(pool, 1, (await leases.live_nodes(pool))[0].incarnation)
        assert [await asyncio.wait_for(payloads.get(), 10) for _ in range(6)] == ["partitions"] * 5 + ["nodes"]
    finally:
        await listener.close()
