"""coordinator/cluster/watcher.py: the ring successor, and the watcher on a real PostgreSQL's session locks."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import asyncpg

from coordinator.cluster.watcher import SessionWatcher, successor
from storage.pg import leases


def nodes(*pairs):
    return [SimpleNamespace(node_id=node_id, session_key=key) for node_id, key in pairs]


def test_successor_is_the_next_node_with_a_session_lock_wrapping_around():
    live = nodes((1, 11), (2, None), (3, 33), (5, 55))
    assert successor(1, live) == (3, 33)  # node 2 holds no lock: its lease alone counts
    assert successor(3, live) == (5, 55)
    assert successor(5, live) == (1, 11)  # wraps around
    assert successor(4, live) == (5, 55)  # we need not be in the list (lapsed, or not registered yet)
    assert successor(1, nodes((1, 11), (2, None))) is None
    assert successor(1, []) is None


async def held_by(conn, pid: int) -> list:
    return await conn.fetch("SELECT mode FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", pid)


async def test_the_watcher_reports_the_end_of_the_watched_session_and_lets_go_of_one_it_stops_watching(pg_url):
    holders = [await asyncpg.connect(pg_url) for _ in range(2)]
    observer = await asyncpg.connect(pg_url)
    ended: asyncio.Queue[int] = asyncio.Queue()
    connections = []

    async def connect():
        connections.append(await asyncpg.connect(pg_url))
        return connections[-1]

    watcher = SessionWatcher(connect, lambda node_id: ended.put_nowait(node_id) or asyncio.sleep(0))
    task = asyncio.create_task(watcher.run())
    try:
        keys = [await leases.hold_session_lock(conn) for conn in holders]
        watcher.watch((2, keys[0]))
        async with asyncio.timeout(10):  # the watcher waits for a shared lock behind node 2's hold
            while not await observer.fetchval(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"):
                await asyncio.sleep(0.01)
        watcher.watch((3, keys[1]))  # the ring changed: stop waiting on node 2, without reporting it
        async with asyncio.timeout(10):
            while await observer.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                                          "AND NOT granted AND objid = $1::bigint::oid", keys[0] & 0xFFFFFFFF):
                await asyncio.sleep(0.01)
        holders[1].terminate()  # node 3's process dies
        assert await asyncio.wait_for(ended.get(), 10) == 3
        assert ended.empty() and watcher.target is None
        watcher.watch((3, keys[1]))  # a refresh that read node 3's lease before it ended: not watched again
        assert watcher.target is None
        assert await held_by(observer, connections[0].get_server_pid()) == []  # it holds nothing afterwards
        await holders[0].close()  # node 2 dies too, but nobody watches it any more
        await asyncio.sleep(0.2)
        assert ended.empty()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for conn in (*holders, observer):
            conn.terminate()
    assert all(conn.is_closed() for conn in connections)  # the watcher closes its connection when stopped
