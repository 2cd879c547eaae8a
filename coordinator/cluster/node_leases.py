"""ClusterMembership: this node's lease in kc_nodes and the loops that keep ownership in step with the cluster.

Five tasks and a timer:
- renew: register, then renew every broker.heartbeat.interval.ms; a failed renew (PostgreSQL down) retries with
  back-off; a renew answered False (our row is gone) loses everything and registers again.
- watchdog (a loop timer at the local lease deadline, see lease.py): when the lease may have lapsed, every
  partition is lost at once (`Reconciler.lose_all`), whatever the other tasks are waiting for.
- session: our own connection (session.py), which LISTENs on kc_cluster and holds the session lock our
  registration names. When it drops, or leaves a probe unanswered for a third of the session timeout (PostgreSQL
  frozen or cut off: then every connection of the node is ended, `unanswered`), the others may end our lease at
  once, so we lose everything, reopen it and register again with a new incarnation; it retries every
  SESSION_RETRY_MAX_S at most, and its reopening wakes the renew and refresh tasks from their back-off, so a
  PostgreSQL restarted or failed over is used again at once. A notification (or a take/release of our own
  finishing) wakes
- refresh: live nodes + partition rows -> ClusterState, then a reconcile. It also wakes just after the earliest
  expiry of another node's lease (so a frozen node's partitions move within the session timeout + a little), and
  every heartbeat interval in case a notification was missed.
- watcher (watcher.py): waits on the session lock of the next node in the ring and ends its lease the moment
  its session does (its process died), so a crashed node's partitions move within milliseconds, not a session.
- orphans: every ORPHAN_CHECK_S, the fallback: end the lease of any node whose session lock is free (its watcher
  died with it).

Stopping (SIGTERM) hands every partition off at once and deregisters; `_halt` alone is a crash (tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from coordinator.cluster.lease import LocalLease
from coordinator.cluster.reconcile import Reconciler
from coordinator.cluster.session import NodeSession, answer_within_s
from coordinator.cluster.state import ClusterState, broker_of
from coordinator.cluster.watcher import SessionWatcher, successor
from storage.pg import leases, ownership

log = structlog.get_logger(__name__)

FIRST_BACKOFF_S = 0.05
# The session task is what notices that PostgreSQL is back (restarted, or a standby promoted): its back-off stops
# growing here, however long the heartbeat interval, and its success wakes the other tasks from theirs.
SESSION_RETRY_MAX_S = 0.5
EXPIRY_MARGIN_S = 0.05  # after another node's lease expires, by PostgreSQL's clock, before we look
ORPHAN_CHECK_S = 0.5  # how often a node looks for the free session lock of a dead one (one small query)


async def wait_up_to(event: asyncio.Event, seconds: float) -> None:
    """Until `event` is set or `seconds` pass. Not asyncio.wait_for: on Python 3.11 it may swallow a cancel
    that arrives as the event is set, and then a stopping loop would never end."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()


def next_look_s(now: float, next_expiry: float | None, heartbeat_s: float) -> float:
    """How long the refresh task may sleep: until just after the earliest expiry of another node's lease, at
    most one heartbeat interval (the safety net for a missed notification)."""
    if next_expiry is None:
        return heartbeat_s
    return min(heartbeat_s, max(0.0, next_expiry - now) + EXPIRY_MARGIN_S)


class ClusterMembership:
    def __init__(self, pool: Any, reconciler: Reconciler, state: ClusterState, *, node_id: int, listeners: Any,
                 rack: str | None, heartbeat_ms: int, session_ms: int,
                 connect: Callable[[], Awaitable[Any]],
                 refresh_catalog: Callable[[], Awaitable[None]] | None = None,
                 unanswered: Callable[[Any], None] = lambda connection: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.pool = pool
        self.reconciler = reconciler
        self.state = state
        self.node_id = node_id
        self.listeners = listeners
        self.rack = rack
        self.heartbeat_s = heartbeat_ms / 1000.0
        self.session_ms = session_ms
        self.session = NodeSession(connect, self._notified, answer_within_s=answer_within_s(session_ms),
                                   unanswered=unanswered)
        self.watcher = SessionWatcher(connect, self._watched_ended)
        self.refresh_catalog = refresh_catalog
        self.clock = clock
        self.lease = LocalLease(session_ms, clock)
        self.incarnation: Any = None  # of our kc_nodes row; None: to register (again)
        self.previous: Any = None  # the incarnation our row had, which a re-registration replaces
        self.lapsed = False
        self._wake = asyncio.Event()
        self._session_open = asyncio.Event()
        self._register_now = asyncio.Event()  # the renew loop's wake-up when our session ended
        # pulsed (set, then replaced) when our session reopens: the tasks backing off after a failure retry at once
        self._reconnected = asyncio.Event()
        self._next_expiry: float | None = None  # clock() at which another node's lease expires
        self._watchdog: asyncio.TimerHandle | None = None
        self._tasks: list[asyncio.Task[None]] = []
        reconciler.changed = self._wake.set

    async def start(self) -> None:
        """Open our session, register (NodeIdInUseError: another live node has our node.id — a start-up error),
        then run."""
        await self.session.open()
        self._session_open.set()
        try:
            sent = self.clock()
            await self._register()
        except BaseException:
            await self.session.close()
            raise
        self._granted(sent)
        await self.refresh()
        self._tasks = [asyncio.create_task(loop(), name=f"cluster-{loop.__name__}")
                       for loop in (self._renew_loop, self._refresh_loop, self._session_loop, self._orphans_loop,
                                    self.watcher.run)]

    async def stop(self) -> None:
        """Hand everything off at once (SIGTERM): give up + release each partition, then deregister (the
        deregistration's NOTIFY makes the others look at once)."""
        await self._halt()
        log.info("stopping.phase", phase="releasing partitions")
        await self.reconciler.stop()
        try:
            if self.incarnation is not None:
                async with asyncio.timeout(self.lease.session_s):
                    await leases.deregister(self.pool, self.node_id, self.incarnation)
        except Exception as exc:  # PostgreSQL unreachable: the lease expires by itself
            log.warning("cluster.deregister_failed", node_id=self.node_id, error=repr(exc),
                        note="its lease will expire")
        finally:
            await self.session.close()

    async def _halt(self) -> None:
        """Stop every task, keeping the session open (to PostgreSQL a halted node is a frozen one)."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def refresh(self) -> None:
        """Read the cluster into the view, then reconcile (unless our lease may have lapsed)."""
        if self.refresh_catalog is not None:
            await self.refresh_catalog()
        asked, as_of = self.clock(), self.reconciler.mark()
        nodes = await leases.live_nodes(self.pool)
        now = await leases.db_now(self.pool)
        rows = await ownership.partitions(self.pool)
        self.state.update([broker_of(n.node_id, n.listeners, n.rack) for n in nodes], rows)
        self.watcher.watch(successor(self.node_id, nodes))
        if self.lapsed:  # PostgreSQL may still count our lease, but we must assume it is gone
            self.state.drop_broker(self.node_id)
        others = [(n.expires_at - now).total_seconds() for n in nodes if n.node_id != self.node_id]
        self._next_expiry = asked + min(others) if others else None
        if not self.lapsed and not self.lease.lapsed():
            self.reconciler.reconcile(rows, [n.node_id for n in nodes], as_of)

    # -- the lease ----------------------------------------------------------------------------------------------

    def _granted(self, sent: float) -> None:
        if not self.lease.granted(sent):
            self._lapse("a renew was answered after the lease may have lapsed")
            return
        if self.lapsed:
            log.info("cluster.lease_regained", node_id=self.node_id)
            self.lapsed = False
            self._wake.set()
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._watchdog = asyncio.get_running_loop().call_later(self.lease.remaining_s(), self._check_lease)

    def _check_lease(self) -> None:
        if self.lease.lapsed():
            self._lapse("the lease was not renewed within broker.session.timeout.ms")
        else:
            self._watchdog = asyncio.get_running_loop().call_later(self.lease.remaining_s(), self._check_lease)

    def _lapse(self, why: str) -> None:
        """Another node may own our partitions now: unload them all at once."""
        if self.lapsed:
            return
        log.warning("cluster.lease_lost", node_id=self.node_id, reason=why, action="unloading every partition")
        self.lapsed = True
        self.lease.drop()
        self.state.drop_broker(self.node_id)
        self.reconciler.lose_all()
        self._wake.set()

    async def _register(self) -> None:
        await self._session_open.wait()
        self.incarnation = await leases.register(self.pool, self.node_id, self.listeners, self.rack,
                                                 self.session_ms, replacing=self.previous,
                                                 session_key=self.session.key)
        self.previous = self.incarnation

    async def _renew_once(self) -> bool:
        """One renew (or a registration when our row is gone); False when the lease was no longer ours."""
        if self.incarnation is None:
            await self._register()
            return True
        return await leases.renew(self.pool, self.node_id, self.incarnation, self.session_ms)

    async def _renew_loop(self) -> None:
        backoff = FIRST_BACKOFF_S
        while True:
            sent = self.clock()
            try:
                async with asyncio.timeout(self.lease.session_s):
                    renewed = await self._renew_once()
            except Exception as exc:  # PostgreSQL unreachable, a timeout, a node id in use: try again
                log.warning("cluster.renew_failed", node_id=self.node_id, error=repr(exc), retry_s=round(backoff, 2))
                await wait_up_to(self._reconnected, backoff)
                backoff = min(backoff * 2, self.heartbeat_s)
                continue
            backoff = FIRST_BACKOFF_S
            if not renewed:
                self._lapse("our lease had expired in PostgreSQL")
                self.incarnation = None
                continue
            if self.incarnation is None:  # our session ended while this renew was on its way: register again
                continue
            self._granted(sent)
            await wait_up_to(self._register_now, max(0.0, sent + self.heartbeat_s - self.clock()))
            self._register_now.clear()

    # -- watching the cluster -----------------------------------------------------------------------------------

    async def _refresh_loop(self) -> None:
        backoff = FIRST_BACKOFF_S
        while True:
            await wait_up_to(self._wake, next_look_s(self.clock(), self._next_expiry, self.heartbeat_s))
            self._wake.clear()
            try:
                await self.refresh()
            except Exception as exc:
                log.warning("cluster.refresh_failed", node_id=self.node_id, error=repr(exc), retry_s=round(backoff, 2))
                await wait_up_to(self._reconnected, backoff)
                backoff = min(backoff * 2, self.heartbeat_s)
                self._wake.set()
                continue
            backoff = FIRST_BACKOFF_S

    def _notified(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        self._wake.set()

    async def _session_loop(self) -> None:
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                if not self.session.is_open():
                    await self.session.open()
                    self._session_open.set()
                    self._wake.set()  # whatever changed while we were not listening
                    self._reconnected.set()
                    self._reconnected = asyncio.Event()
                backoff = FIRST_BACKOFF_S
                await self.session.until_closed()
                self._session_ended()
            except Exception as exc:
                log.warning("cluster.session_failed", node_id=self.node_id, error=repr(exc),
                            retry_s=round(backoff, 2))
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.heartbeat_s, SESSION_RETRY_MAX_S)

    def _session_ended(self) -> None:
        """Our session lock is gone, so the others may end our lease any moment: let go of everything now, and
        register again (a new incarnation) once the session is back."""
        log.warning("cluster.session_ended", node_id=self.node_id, action="reopening it, then registering again")
        self._session_open.clear()
        self._lapse("our PostgreSQL session ended")
        self.incarnation = None
        self._register_now.set()

    async def _orphans_loop(self) -> None:
        while True:
            await asyncio.sleep(ORPHAN_CHECK_S)
            await self._expire_orphans()

    async def _watched_ended(self, node_id: int) -> None:
        await self._expire_orphans()

    async def _expire_orphans(self) -> None:
        """End the lease of every node whose session ended (not while our own standing is in doubt)."""
        if self.lapsed or self.incarnation is None:
            return
        try:
            gone = await leases.expire_orphaned(self.pool, self.node_id)
        except Exception as exc:  # PostgreSQL trouble: the renew and refresh loops report and retry it
            log.debug("cluster.orphan_check_failed", node_id=self.node_id, error=repr(exc))
            return
        if gone:
            log.warning("cluster.node_session_ended", node_id=self.node_id, dead=gone,
                        action="their leases ended now; taking their share")
            self._wake.set()
