"""storage/pg/leases.py against a real PostgreSQL: leases are timed by PostgreSQL's clock."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from storage.pg import leases
from storage.pg.connect import open_pool
from storage.pg.errors import NodeIdInUseError
from storage.pg.notify import CHANNEL, notify

LISTENERS = [{"name": "PLAINTEXT", "host": "node1", "port": 9092}]
TINY_SESSION_MS = 50  # expires quickly; tests wait for expiry with PostgreSQL's clock, not a sleep bound


@pytest.fixture
async def pool(pg_url):
    pool = await open_pool(pg_url, max_size=4)
    yield pool
    await pool.close()


async def wait_expired(pool, node_id: int) -> None:
    """Until PostgreSQL's clock passes the node's expiry (no fixed sleep to tune)."""
    while await pool.fetchval("SELECT expires_at > clock_timestamp() FROM kc_nodes WHERE node_id = $1", node_id):
        await asyncio.sleep(0.01)


async def test_register_then_live_nodes(pool):
    incarnation = await leases.register(pool, 1, LISTENERS, "rack-a", 10_000)
    await leases.register(pool, 2, [], None, 10_000)
    nodes = await leases.live_nodes(pool)
    assert [(n.node_id, n.listeners, n.rack) for n in nodes] == [(1, LISTENERS, "rack-a"), (2, [], None)]
    assert nodes[0].incarnation == incarnation
    assert nodes[0].expires_at > await leases.db_now(pool)


async def test_a_live_node_id_cannot_be_registered_twice(pool):
    first = await leases.register(pool, 1, LISTENERS, None, 10_000)
    with pytest.raises(NodeIdInUseError):
        await leases.register(pool, 1, LISTENERS, None, 10_000)
    assert [n.incarnation for n in await leases.live_nodes(pool)] == [first]
    assert await leases.renew(pool, 1, first, 10_000)


async def test_after_expiry_another_incarnation_registers_and_the_old_one_cannot_renew(pool):
    old = await leases.register(pool, 1, LISTENERS, None, TINY_SESSION_MS)
    await wait_expired(pool, 1)
    assert await leases.live_nodes(pool) == []
    new = await leases.register(pool, 1, LISTENERS, None, 10_000)
    assert new != old
    assert not await leases.renew(pool, 1, old, 10_000)
    assert await leases.renew(pool, 1, new, 10_000)
    assert not await leases.deregister(pool, 1, old)
    assert [n.incarnation for n in await leases.live_nodes(pool)] == [new]


async def test_an_expired_lease_is_not_renewed_even_if_nobody_took_it(pool):
    incarnation = await leases.register(pool, 1, LISTENERS, None, TINY_SESSION_MS)
    await wait_expired(pool, 1)
    assert not await leases.renew(pool, 1, incarnation, 10_000)


async def test_renew_extends_the_lease_by_postgres_time(pool):
    incarnation = await leases.register(pool, 1, LISTENERS, None, 1_000)
    before = (await leases.live_nodes(pool))[0].expires_at
    assert await leases.renew(pool, 1, incarnation, 60_000)
    after = (await leases.live_nodes(pool))[0].expires_at
    assert (after - await leases.db_now(pool)).total_seconds() > 50
    assert after > before


async def test_register_may_replace_our_own_live_incarnation(pool):
    old = await leases.register(pool, 1, LISTENERS, None, 10_000)
    new = await leases.register(pool, 1, LISTENERS, None, 10_000, replacing=old)
    assert not await leases.renew(pool, 1, old, 10_000)
    with pytest.raises(NodeIdInUseError):
        await leases.register(pool, 1, LISTENERS, None, 10_000, replacing=old)
    assert [n.incarnation for n in await leases.live_nodes(pool)] == [new]


async def test_deregister_removes_only_our_row(pool):
    incarnation = await leases.register(pool, 1, LISTENERS, None, 10_000)
    assert await leases.deregister(pool, 1, incarnation)
    assert await leases.live_nodes(pool) == []
    assert not await leases.deregister(pool, 1, incarnation)


async def test_register_and_deregister_notify_nodes(pool, pg_url):
    listener = await asyncpg.connect(pg_url)
    payloads: asyncio.Queue[str] = asyncio.Queue()
    await listener.add_listener(CHANNEL, lambda *args: payloads.put_nowait(args[3]))
    try:
        incarnation = await leases.register(pool, 1, LISTENERS, None, 10_000)
        assert await asyncio.wait_for(payloads.get(), 10) == "nodes"
        assert await leases.renew(pool, 1, incarnation, 10_000)
        assert await leases.deregister(pool, 1, incarnation)
        assert await asyncio.wait_for(payloads.get(), 10) == "nodes"
        await notify(pool, "topics")  # a marker: had renew notified, a third "nodes" would come first
        assert await asyncio.wait_for(payloads.get(), 10) == "topics"
    finally:
        await listener.close()


async def test_a_lease_whose_session_lock_is_free_ends_at_once(pool, pg_url):
    sessions = {node_id: await asyncpg.connect(pg_url) for node_id in (1, 2)}
    try:
        keys = {node_id: await leases.hold_session_lock(conn) for node_id, conn in sessions.items()}
        assert keys[1] != keys[2]
        for node_id in (1, 2):
            await leases.register(pool, node_id, LISTENERS, None, 60_000, session_key=keys[node_id])
        await leases.register(pool, 3, LISTENERS, None, 60_000)  # holds no session lock: its lease alone counts
        assert await leases.expire_orphaned(pool, me=1) == []  # both locks held: nothing to end
        sessions[2].terminate()  # as a killed process's kernel closes its connection
        watcher = await asyncpg.connect(pg_url)  # a watcher granted its shared lock on the dead node's key ...
        sessions["watcher"] = watcher
        await watcher.execute("SELECT pg_advisory_lock_shared($1)", keys[2])  # ... must not keep the node alive
        async with asyncio.timeout(10):
            while await leases.expire_orphaned(pool, me=1) != [2]:  # freed as the backend exits
                await asyncio.sleep(0.01)
        assert [n.node_id for n in await leases.live_nodes(pool)] == [1, 3]
        assert await leases.expire_orphaned(pool, me=1) == []  # ended once
        await sessions[1].close()
        assert await leases.expire_orphaned(pool, me=1) == []  # never our own: the node itself lets go of that
        assert [n.node_id for n in await leases.live_nodes(pool)] == [1, 3]
    finally:
        for conn in sessions.values():
            conn.terminate()


async def test_a_node_id_whose_session_ended_is_taken_at_once_one_still_held_is_not(pool, pg_url):
    old_session, new_session = await asyncpg.connect(pg_url), await asyncpg.connect(pg_url)
    try:
        old = await leases.register(pool, 1, LISTENERS, None, 60_000,
                                    session_key=await leases.hold_session_lock(old_session))
        key = await leases.hold_session_lock(new_session)
        with pytest.raises(NodeIdInUseError):  # its lease is live and so is its session
            await leases.register(pool, 1, LISTENERS, None, 60_000, session_key=key)
        await old_session.close()  # killed and restarted at once: the old session is gone, its lease is not
        new = await leases.register(pool, 1, LISTENERS, None, 60_000, session_key=key)
        assert not await leases.renew(pool, 1, old, 60_000)
        assert [(n.node_id, n.incarnation) for n in await leases.live_nodes(pool)] == [(1, new)]
        assert await pool.fetchval("SELECT session_key FROM kc_nodes WHERE node_id = 1") == key
    finally:
        old_session.terminate()
        new_session.terminate()
