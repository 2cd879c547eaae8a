"""Sending a transaction's markers: COMMIT or ABORT into every partition of the transaction.

Kafka's TransactionMarkerChannelManager: once the PrepareCommit/PrepareAbort record is durable, a marker
goes to each partition (topic partitions: the data plane appends a control batch; the group's
`__consumer_offsets` partition: the group coordinator appends it and settles the producer's pending
offsets); when all are written the transaction completes (CompleteCommit/CompleteAbort). A partition that
no longer exists is done (Kafka drops markers for UNKNOWN_TOPIC_OR_PARTITION); a retriable failure (not
the leader now, loading, a storage error) is retried after `retry_backoff_ms`, for as long as this node
coordinates the transaction -- Kafka retries the same way until the coordinator's partition moves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import error_code_for
from rules.placement import OFFSETS_TOPIC

log = structlog.get_logger(__name__)

RETRY_BACKOFF_MS = 100
DONE_CODES = frozenset({ErrorCode.none, ErrorCode.unknown_topic_or_partition})
FENCED_CODES = frozenset({ErrorCode.transaction_coordinator_fenced, ErrorCode.invalid_producer_epoch,
                          ErrorCode.producer_fenced})

# (topic, partition, producer_id, producer_epoch, commit, coordinator_epoch) -> durable
WriteMarker = Callable[[str, int, int, int, bool, int], Awaitable[None]]


class MarkerWriter:
    """Writes one marker into one partition: the data plane's topics, or the group coordinator's offsets log
    (a remote node's partitions: `remote`, WriteTxnMarkers in cluster mode; None = all partitions local)."""

    def __init__(self, data_marker: WriteMarker, offsets_marker: Callable[[int, int, int, bool, int], Awaitable[None]],
                 remote: WriteMarker | None = None, is_local: Callable[[str, int], bool] | None = None) -> None:
        self.data_marker = data_marker
        self.offsets_marker = offsets_marker
        self.remote = remote
        self.is_local = is_local

    async def write(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                    coordinator_epoch: int) -> None:
        if self.remote is not None and self.is_local is not None and not self.is_local(topic, partition):
            await self.remote(topic, partition, producer_id, producer_epoch, commit, coordinator_epoch)
        elif topic == OFFSETS_TOPIC:
            await self.offsets_marker(partition, producer_id, producer_epoch, commit, coordinator_epoch)
        else:
            await self.data_marker(topic, partition, producer_id, producer_epoch, commit, coordinator_epoch)


async def send_markers(writer: MarkerWriter, partitions: Iterable[tuple[str, int]], producer_id: int,
                       producer_epoch: int, commit: bool, coordinator_epoch: int,
                       still_ours: Callable[[], bool], retry_backoff_ms: int = RETRY_BACKOFF_MS) -> bool:
    """Write the marker into every partition; True once all are written (or gone), False when this node
    stopped coordinating the transaction first (the next coordinator resends them after its load)."""
    left = set(partitions)
    while left:
        if not still_ours():
            return False
        ordered = sorted(left)
        results = await asyncio.gather(*(writer.write(topic, p, producer_id, producer_epoch, commit,
                                                      coordinator_epoch) for topic, p in ordered),
                                       return_exceptions=True)
        for (topic, p), result in zip(ordered, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                raise result
            code = ErrorCode.none if result is None else error_code_for(result)
            if code in DONE_CODES:
                left.discard((topic, p))
            elif code in FENCED_CODES:
                # Kafka logs these and drops the marker: a newer coordinator or producer epoch owns it
                log.warning("transaction marker refused", topic=topic, partition=p, producer_id=producer_id,
                            producer_epoch=producer_epoch, error=code.name)
                left.discard((topic, p))
            else:
                log.info("transaction marker will be retried", topic=topic, partition=p,
                         producer_id=producer_id, error=code.name)
        if left:
            await asyncio.sleep(retry_backoff_ms / 1000)
    return True
