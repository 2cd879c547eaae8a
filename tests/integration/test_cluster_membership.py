"""ClusterMembership on a real PostgreSQL: two or three nodes in one event loop, with fake hooks.

Every node has its own pool and LISTEN connection, as separate processes would. The offsets topic's 50
partitions are the rows they share. Timings are small (heartbeat 300 ms, session 1500 ms) unless a test needs
to show that something happens sooner than a timer would make it happen.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import asyncpg
import pytest

from coordinator.cluster import node_leases
from coordinator.cluster.assignment import desired_owners
from coordinator.cluster.node_leases import ClusterMembership
from coordinator.cluster.reconcile import OwnershipStore, Reconciler
from coordinator.cluster.state import ClusterState, advertised_listeners
from coordinator.cluster.watcher import SessionWatcher
from storage.pg import connect, leases, ownership
from storage.pg.errors import NodeIdInUseError

pytestmark = pytest.mark.integration

TOPIC = uuid.UUID("0c0ffee0-0000-4000-8000-000000000050")
PARTITIONS = 50
KEYS = [(TOPIC, p) for p in range(PARTITIONS)]


class Hooks:
    """Records what a node was told; `held` is what it has loaded."""

    def __init__(self) -> None:
        self.held: dict[tuple, int] = {}
        self.events: list[tuple[str, int]] = []

    async def take(self, topic_id, partition, epoch) -> None:
        await asyncio.sleep(0.001)  # a load takes a moment
        self.held[(topic_id, partition)] = epoch
        self.events.append(("take", partition))

    async def give_up(self, topic_id, partition) -> None:
        del self.held[(topic_id, partition)]
        self.events.append(("give_up", partition))

    def lost(self, topic_id, partition) -> None:
        del self.held[(topic_id, partition)]
        self.events.append(("lost", partition))


class Cluster:
    def __init__(self, url: str) -> None:
        self.url = url
        self.nodes: dict[int, ClusterMembership] = {}
        self.hooks: dict[int, Hooks] = {}
        self.pools: list[asyncpg.Pool] = []

    async def start(self, node_id: int, heartbeat_ms: int = 300, session_ms: int = 1500) -> ClusterMembership:
        pool = await connect.open_pool(self.url, max_size=4)
        self.pools.append(pool)
        hooks = self.hooks[node_id] = Hooks()
        reconciler = Reconciler(hooks, OwnershipStore.over(pool, node_id), node_id)
        node = ClusterMembership(pool, reconciler, ClusterState(node_id, {"offsets": TOPIC}.get), node_id=node_id,
                                 listeners=advertised_listeners([("PLAINTEXT", "127.0.0.1", 9000 + node_id)]),
                                 rack=None,
                                 heartbeat_ms=heartbeat_ms, session_ms=session_ms,
                                 connect=lambda: asyncpg.connect(self.url))
        await node.start()
        self.nodes[node_id] = node
        return node

    def owners(self) -> dict[tuple, int]:
        return {key: node_id for node_id, hooks in self.hooks.items() for key in hooks.held}

    def spread(self, live: list[int]) -> dict[tuple, int]:
        return desired_owners(KEYS, live)

    async def settled(self, live: list[int], within_s: float) -> float:
        """Seconds until every partition is held by its desired node, and by no other."""
        return await until(lambda: self.owners() == self.spread(live) and self.total_held() == PARTITIONS,
                           within_s)

    def total_held(self) -> int:
        return sum(len(hooks.held) for hooks in self.hooks.values())

    async def close(self) -> None:
        for node in self.nodes.values():
            await node._halt()
            await node.session.close()
        for pool in self.pools:
            await pool.close()


async def until(condition: Callable[[], bool], within_s: float) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not condition():
        assert loop.time() - start < within_s, f"not within {within_s} s"
        await asyncio.sleep(0.01)
    return loop.time() - start


@pytest.fixture
async def cluster(pg_url):
    pool = await connect.open_pool(pg_url, max_size=2)
    await ownership.ensure_partitions(pool, TOPIC, PARTITIONS)
    await pool.close()
    made = Cluster(pg_url)
    yield made
    await made.close()


async def test_three_nodes_spread_the_partitions_evenly(cluster):
    for node_id in (1, 2, 3):
        await cluster.start(node_id)
    await cluster.settled([1, 2, 3], within_s=10)
    counts = [len(cluster.hooks[n].held) for n in (1, 2, 3)]
    assert min(counts) >= 8, counts
    rows = await ownership.partitions(cluster.pools[0])
    assert {(r.topic_id, r.partition): r.owner for r in rows} == cluster.owners()
    assert all(r.epoch == cluster.hooks[r.owner].held[(r.topic_id, r.partition)] for r in rows)
    state = cluster.nodes[1].state
    await until(lambda: all(state.leader("offsets", p) == cluster.owners()[(TOPIC, p)] for p in range(PARTITIONS)),
                within_s=3)
    assert [b.node_id for b in state.brokers()] == [1, 2, 3] and state.controller_id() == 1
    assert state.broker(2).port == 9002


async def test_a_graceful_stop_hands_off_within_a_notification_not_a_session(cluster):
    for node_id in (1, 2, 3):
        await cluster.start(node_id, heartbeat_ms=10000, session_ms=30000)
    await cluster.settled([1, 2, 3], within_s=20)
    before = cluster.spread([1, 2, 3])
    leaving = cluster.nodes.pop(3)
    gone = dict(cluster.hooks[3].held)
    for hooks in cluster.hooks.values():
        hooks.events.clear()
    await leaving.stop()
    assert cluster.hooks[3].held == {} and sorted(p for e, p in cluster.hooks[3].events if e == "give_up") == \
        sorted(p for _, p in gone)
    # the periodic refresh is 10 s apart and no lease expires: only the NOTIFYs move them this soon
    await cluster.settled([1, 2], within_s=6)
    after = cluster.spread([1, 2])
    taken = {(TOPIC, p) for n in (1, 2) for e, p in cluster.hooks[n].events if e == "take"}
    assert set(gone) <= taken  # all of node 3's, plus the few the even spread moves between nodes 1 and 2
    assert taken == {key for key in after if before[key] != after[key]}
    for node_id in (1, 2):
        given = {(TOPIC, p) for e, p in cluster.hooks[node_id].events if e == "give_up"}
        assert given == {key for key in after if before[key] == node_id != after[key]}


async def test_a_frozen_node_is_taken_over_after_its_session(cluster):
    for node_id in (1, 2, 3):
        await cluster.start(node_id)
    await cluster.settled([1, 2, 3], within_s=10)
    victim = cluster.nodes.pop(3)
    await victim._halt()  # its tasks stop, its connection stays open (SIGSTOP): only its lease can run out
    orphans = {key for key, owner in cluster.spread([1, 2, 3]).items() if owner == 3}
    await asyncio.sleep(0.5)  # its lease (renewed at most 300 ms before) is still live in PostgreSQL
    assert not orphans & (set(cluster.hooks[1].held) | set(cluster.hooks[2].held))
    del cluster.hooks[3]
    await cluster.settled([1, 2], within_s=1.5 + 3)
    await victim.session.close()


@pytest.mark.parametrize("noticed_by", ["watcher", "orphan check"])
async def test_a_node_whose_session_ends_is_taken_over_at_once_not_after_its_session(cluster, monkeypatch,
                                                                                      noticed_by):
    if noticed_by == "watcher":  # the orphan check would come too late to matter
        monkeypatch.setattr(node_leases, "ORPHAN_CHECK_S", 3600)
    else:  # no watcher (e.g. it died with the node it watched): the orphan check alone
        monkeypatch.setattr(SessionWatcher, "watch", lambda self, target: None)
    reported: list[tuple[int, int]] = []  # (watching node, node whose session ended)
    watched_ended = ClusterMembership._watched_ended

    async def recording(self, node_id: int) -> None:
        reported.append((self.node_id, node_id))
        await watched_ended(self, node_id)
    monkeypatch.setattr(ClusterMembership, "_watched_ended", recording)
    for node_id in (1, 2, 3):
        await cluster.start(node_id, heartbeat_ms=10000, session_ms=30000)
    await cluster.settled([1, 2, 3], within_s=20)
    victim = cluster.nodes.pop(3)
    await victim._halt()
    victim.session._connection.terminate()  # killed: its kernel closes the connection, PostgreSQL frees the lock
    del cluster.hooks[3]
    await cluster.settled([1, 2], within_s=5)  # its lease (30 s) is still live: only the free lock ends it this soon
    assert reported == ([(2, 3)] if noticed_by == "watcher" else [])  # node 3's watcher is node 2 (the ring)
    assert [n.node_id for n in await leases.live_nodes(cluster.pools[0])] == [1, 2]


async def test_a_paused_node_loses_everything_and_its_stale_epochs_are_fenced(cluster, monkeypatch):
    for node_id in (1, 2):
        await cluster.start(node_id)
    await cluster.settled([1, 2], within_s=10)
    paused = cluster.nodes[2]
    stale = dict(cluster.hooks[2].held)
    stalled = asyncio.Event()

    async def never_answered() -> bool:
        await stalled.wait()
        return True
    monkeypatch.setattr(paused, "_renew_once", never_answered)
    await until(lambda: cluster.hooks[2].held == {}, within_s=1.5 + 1)
    assert sorted(p for e, p in cluster.hooks[2].events if e == "lost") == sorted(p for _, p in stale)
    assert not any(paused.state.owns("offsets", p) for p in range(PARTITIONS))
    await until(lambda: len(cluster.hooks[1].held) == PARTITIONS, within_s=5)
    pool = cluster.pools[1]
    for (topic_id, partition), epoch in stale.items():
        assert not await ownership.release(pool, topic_id, partition, 2, epoch)
        assert await ownership.acquire(pool, topic_id, partition, 2, [2]) is None
    rows = {(r.topic_id, r.partition): r for r in await ownership.partitions(pool)}
    assert all(rows[key].owner == 1 and rows[key].epoch > epoch for key, epoch in stale.items())
    monkeypatch.undo()  # it wakes up: renews (or registers again) and takes its share back
    await cluster.settled([1, 2], within_s=10)


async def test_a_joining_node_takes_its_share_and_the_others_give_up_exactly_that(cluster):
    for node_id in (1, 2):
        await cluster.start(node_id)
    await cluster.settled([1, 2], within_s=10)
    before = cluster.spread([1, 2])
    for hooks in cluster.hooks.values():
        hooks.events.clear()
    await cluster.start(3)
    await cluster.settled([1, 2, 3], within_s=10)
    after = cluster.spread([1, 2, 3])
    moved = {key for key, owner in after.items() if owner == 3}
    for node_id in (1, 2):  # each gives up what the even spread over three now wants elsewhere, nothing more
        given = {(TOPIC, p) for e, p in cluster.hooks[node_id].events if e == "give_up"}
        assert given == {key for key in after if before[key] == node_id != after[key]}
        taken = {(TOPIC, p) for e, p in cluster.hooks[node_id].events if e == "take"}
        assert taken == {key for key in after if before[key] != node_id == after[key]}
    assert len(moved) in (16, 17)


async def test_postgresql_lost_while_running_loses_everything_and_it_all_comes_back(cluster, postgres_server):
    await cluster.start(1)
    await cluster.settled([1], within_s=10)
    epochs = dict(cluster.hooks[1].held)
    database = cluster.url.rsplit("/", 1)[1]
    postgres_server.sql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
    postgres_server.sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'")
    await until(lambda: cluster.hooks[1].held == {}, within_s=1.5 + 1)
    assert sorted(p for e, p in cluster.hooks[1].events if e == "lost") == list(range(PARTITIONS))
    await asyncio.sleep(0.5)  # renewing in vain, with back-off
    postgres_server.sql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
    await cluster.settled([1], within_s=10)  # registered again, every partition re-taken at a new epoch
    assert all(epoch > epochs[key] for key, epoch in cluster.hooks[1].held.items())
    assert cluster.nodes[1].state.brokers()[0].node_id == 1


async def test_after_a_long_outage_postgresql_is_used_again_at_once_not_after_a_heartbeat_long_back_off(
        cluster, postgres_server):
    """A heartbeat of 20 s lets the back-offs grow to 6.4 s during an 8 s outage (a failover whose HA manager takes
    its time): the session task still retries every SESSION_RETRY_MAX_S, and its reopening wakes the renew and
    refresh tasks, so the node registers again and re-takes everything within a second or so of PostgreSQL's
    return (a back-off of 6.4 s on each would take up to 12.8 s)."""
    await cluster.start(1, heartbeat_ms=20000, session_ms=60000)
    await cluster.settled([1], within_s=10)
    database = cluster.url.rsplit("/", 1)[1]
    postgres_server.sql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
    postgres_server.sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'")
    await until(lambda: cluster.hooks[1].held == {}, within_s=5)
    await asyncio.sleep(8)
    postgres_server.sql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
    await cluster.settled([1], within_s=4)


async def test_a_dropped_session_loses_everything_then_registers_again_and_listens(cluster, postgres_server):
    for node_id in (1, 2):
        await cluster.start(node_id, heartbeat_ms=10000, session_ms=30000)
    await cluster.settled([1, 2], within_s=20)
    incarnations = {n.node_id: n.incarnation for n in await leases.live_nodes(cluster.pools[0])}
    held = {node_id: set(hooks.held) for node_id, hooks in cluster.hooks.items()}
    database = cluster.url.rsplit("/", 1)[1]
    listening = f"FROM pg_stat_activity WHERE datname = '{database}' AND query LIKE 'LISTEN%'"
    old = set(postgres_server.sql(f"SELECT pid {listening}").split())
    assert len(old) == 2
    postgres_server.sql(f"SELECT pg_terminate_backend(pid) {listening}")

    def reopened() -> bool:
        pids = set(postgres_server.sql(f"SELECT pid {listening}").split())
        return len(pids) == 2 and not pids & old
    await until(reopened, within_s=6)
    for node_id, hooks in cluster.hooks.items():  # the others could end its lease at once: it let go of all
        assert {(TOPIC, p) for e, p in hooks.events if e == "lost"} == held[node_id]
    await cluster.settled([1, 2], within_s=6)  # new incarnations, long before a 30 s session
    now = {n.node_id: n.incarnation for n in await leases.live_nodes(cluster.pools[0])}
    assert now.keys() == {1, 2} and not set(now.values()) & set(incarnations.values())
    await cluster.nodes.pop(2).stop()
    await cluster.settled([1], within_s=6)  # only a notification can move them this soon


async def test_a_second_live_node_with_the_same_id_cannot_start(cluster):
    await cluster.start(1)
    twin = Cluster(cluster.url)
    try:
        with pytest.raises(NodeIdInUseError):
            await twin.start(1)
    finally:
        await twin.close()
