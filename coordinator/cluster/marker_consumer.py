"""The holder side of queued transaction markers (cluster mode; the queue: storage/pg/txn_markers.py).

For a partition this node holds, the markers other nodes' transaction coordinators queued are written
into its log by this node's own writer (the data plane's write_marker for a topic partition, the group
coordinator's complete_transaction for an __consumer_offsets partition:
transactions/runtime/markers.MarkerWriter without
a remote), one at a time in queue order, and the rows of those now durable are deleted -- which tells
the waiting coordinator. A partition is drained when a marker for it is queued (NOTIFY), when this node
takes it (markers queued while it had no holder), and at every `sweep` (a missed notification).

As Kafka's partition leader answers WriteTxnMarkers: a marker refused for good (the partition is gone,
a newer coordinator or producer epoch: transactions/runtime/markers.DONE_CODES / FENCED_CODES) is dropped -- its row
deleted too, the coordinator counts it as done; a retriable failure (not the holder any more, loading,
PostgreSQL away) keeps the row and the rest of that partition's queue behind it, retried with back-off
while this node holds the partition, else by the next holder.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from coordinator.errors import error_code_for
from coordinator.transactions.runtime.markers import DONE_CODES, FENCED_CODES, WriteMarker
from storage.pg import txn_markers

log = structlog.get_logger(__name__)

Key = tuple[uuid.UUID, int]
BATCH = 100  # rows read per query
FIRST_RETRY_S = 0.05


class MarkerConsumer:
    """`holding(topic_id, partition)`: the topic's name while this node holds the partition, else None;
    `writer`: this node's local marker writer (set once the transaction coordinator is built)."""

    def __init__(self, pool: Any, holding: Callable[[uuid.UUID, int], str | None],
                 writer: WriteMarker | None = None, *, max_retry_s: float = 2.0,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        self.pool = pool
        self.holding = holding
        self.writer = writer
        self.max_retry_s = max_retry_s
        self.sleep = sleep
        self._draining: dict[Key, asyncio.Task[None]] = {}
        self._again: set[Key] = set()
        self.written = 0  # markers written (tests, logs)

    def queued(self, topic_id: uuid.UUID, partition: int) -> None:
        """A marker was queued for this partition (any node's notification): drain it if held here."""
        if self.holding(topic_id, partition) is not None:
            self._drain_soon((topic_id, partition))

    def taken(self, key: Key) -> None:
        """This node took the partition: write what was queued while it had no holder."""
        self._drain_soon(key)

    async def sweep(self) -> int:
        """Drain every held partition with queued markers (the safety net); returns how many were started."""
        await txn_markers.delete_orphans(self.pool)
        started = 0
        for topic_id, partition in await txn_markers.queued_partitions(self.pool):
            if self.holding(topic_id, partition) is not None:
                started += 1
                self._drain_soon((topic_id, partition))
        return started

    async def run(self, interval_s: float) -> None:
        """`sweep` every `interval_s` until cancelled."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.sweep()
            except Exception as exc:  # PostgreSQL away: the next sweep tries again
                log.debug("cluster.txn_markers.sweep_failed", error=repr(exc))

    def _drain_soon(self, key: Key) -> None:
        if self.writer is None:
            return  # no transaction coordinator yet: the sweep after it comes finds the rows
        task = self._draining.get(key)
        if task is not None and not task.done():
            self._again.add(key)  # the running drain reads the queue again before it ends
            return
        task = asyncio.ensure_future(self._drain(key))
        self._draining[key] = task
        task.add_done_callback(lambda t: self._drained(key, t))

    def _drained(self, key: Key, task: asyncio.Task[None]) -> None:
        if self._draining.get(key) is task:
            del self._draining[key]
        if not task.cancelled() and task.exception() is not None:
            log.warning("cluster.txn_markers.drain_failed", topic_id=str(key[0]), partition=key[1],
                        error=repr(task.exception()), action="the next sweep tries again")

    async def _drain(self, key: Key) -> None:
        retry_s = FIRST_RETRY_S
        while True:
            self._again.discard(key)
            topic = self.holding(*key)
            if topic is None:
                return
            rows = await txn_markers.queued(self.pool, key[0], key[1], BATCH)
            done, blocked = await self._write(topic, rows)
            if done:
                await txn_markers.delete(self.pool, done)
            if blocked:
                await self.sleep(retry_s)
                retry_s = min(retry_s * 2, self.max_retry_s)
            elif len(rows) < BATCH and key not in self._again:
                return
            else:
                retry_s = FIRST_RETRY_S

    async def _write(self, topic: str, rows: list[txn_markers.QueuedMarker]) -> tuple[list[int], bool]:
        """Write `rows` in order; (the ids to delete, whether a retriable failure stopped the rest)."""
        assert self.writer is not None
        done: list[int] = []
        for row in rows:
            try:
                await self.writer(topic, row.partition, row.producer_id, row.producer_epoch, row.commit,
                                  row.coordinator_epoch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                code = error_code_for(exc)
                if code not in DONE_CODES and code not in FENCED_CODES:
                    log.info("cluster.txn_markers.retry", topic=topic, partition=row.partition,
                             producer_id=row.producer_id, error=code.name)
                    return done, True
                log.warning("cluster.txn_markers.dropped", topic=topic, partition=row.partition,
                            producer_id=row.producer_id, producer_epoch=row.producer_epoch, error=code.name)
            else:
                self.written += 1
            done.append(row.id)
        return done, False

    async def stop(self) -> None:
        tasks = list(self._draining.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
