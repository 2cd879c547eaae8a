"""The coordinator side of transaction markers for partitions another node holds (cluster mode).

Kafka's transaction coordinator sends WriteTxnMarkers to each partition's leader. Nodes here share one
PostgreSQL and need no connections (nor credentials) between them: `remote` queues the marker in
kc_txn_markers (storage/pg/txn_markers.py) and completes once the holder has written it and deleted its
row -- seen by the holder's NOTIFY of the ids it deleted, or, should a notification be missed (our
session reconnecting, a topic deletion, which deletes rows without one), by a poll of the ids still
waiting every `poll_s`. A partition that does not exist answers UNKNOWN_TOPIC_OR_PARTITION (the marker
sender counts it as done, as Kafka drops the markers of a deleted partition); PostgreSQL unreachable at
queueing answers REQUEST_TIMED_OUT (retried). Once queued, a marker is written whatever happens to this
node: a waiter cancelled (the coordinator moved) leaves its row to be written all the same.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError, UnknownTopicOrPartition
from storage.errors import StorageError
from storage.pg import txn_markers

log = structlog.get_logger(__name__)

POLL_S = 0.5
REMEMBERED_DONE = 4096  # ids whose done notification came before their waiter was registered


class MarkerQueue:
    def __init__(self, pool: Any, topic_id_of: Callable[[str], uuid.UUID | None], *, poll_s: float = POLL_S,
                 queued: Callable[[uuid.UUID, int], None] = lambda topic_id, partition: None) -> None:
        self.pool = pool
        self.topic_id_of = topic_id_of
        self.poll_s = poll_s
        self.queued = queued  # told of every marker queued by any node (the holder's consumer)
        self._waiting: dict[int, asyncio.Future[None]] = {}
        self._done: OrderedDict[int, None] = OrderedDict()
        self._poller: asyncio.Task[None] | None = None

    async def remote(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> None:
        """Queue the marker for the partition's holder; returns once it is written (MarkerWriter's `remote`)."""
        topic_id = self.topic_id_of(topic)
        if topic_id is None:
            raise UnknownTopicOrPartition(f"{topic}-{partition}: no such topic")
        try:
            marker_id = await txn_markers.enqueue(self.pool, topic_id, partition, producer_id, producer_epoch,
                                                  commit, coordinator_epoch)
        except StorageError as exc:
            raise KafkaError(f"queueing a transaction marker for {topic}-{partition}: {exc}",
                             ErrorCode.request_timed_out) from exc
        if marker_id is None:
            raise UnknownTopicOrPartition(f"{topic}-{partition}: no such partition")
        if marker_id in self._done:  # written (and its notification seen) already
            del self._done[marker_id]
            return
        done = asyncio.get_running_loop().create_future()
        self._waiting[marker_id] = done
        if self._poller is None or self._poller.done():
            self._poller = asyncio.ensure_future(self._poll())
        try:
            await done
        finally:
            self._waiting.pop(marker_id, None)

    def notified(self, payload: str) -> None:
        """A notification of txn_markers.CHANNEL (any node's)."""
        parsed = txn_markers.parse(payload)
        if parsed is None:
            log.warning("cluster.txn_markers.bad_notification", payload=payload[:100])
        elif parsed.kind == txn_markers.QUEUED and parsed.topic_id is not None:
            self.queued(parsed.topic_id, parsed.partition)
        else:
            self._written(parsed.ids)

    def _written(self, ids: Iterable[int]) -> None:
        for marker_id in ids:
            done = self._waiting.pop(marker_id, None)
            if done is not None:
                if not done.done():
                    done.set_result(None)
            else:  # another node's marker, or ours before its waiter exists: remember a few
                self._done[marker_id] = None
                if len(self._done) > REMEMBERED_DONE:
                    self._done.popitem(last=False)

    async def _poll(self) -> None:
        while self._waiting:
            await asyncio.sleep(self.poll_s)
            ids = list(self._waiting)
            if not ids:
                return
            try:
                left = await txn_markers.still_queued(self.pool, ids)
            except Exception as exc:  # PostgreSQL away: the rows wait there; look again
                log.debug("cluster.txn_markers.poll_failed", error=repr(exc))
                continue
            self._written([marker_id for marker_id in ids if marker_id not in left])

    def waiting(self) -> int:
        return len(self._waiting)

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        for done in self._waiting.values():
            done.cancel()
