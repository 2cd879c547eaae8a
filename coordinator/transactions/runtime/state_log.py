"""`<log.dirs>/__transaction_state-<p>/`: the transaction coordinator's log, in Kafka's layout and bytes.

Each write is one record (TransactionLogKey, TransactionLogValue or a tombstone) in a batch of its own,
appended to a storage.log.PartitionLog (group commit: the writes of one loop turn share a write and an
fsync); the write's future completes once it is durable. Loading scans the log and keeps the latest value
per transactional id (the log is keyed like Kafka's compacted topic), in chunks between which the loop runs.
Like Kafka's topic (cleanup.policy=compact), closed segments are compacted (`compact`: storage/log_compaction,
Kafka's cleaner rules: the latest record per transactional id, tombstones kept delete.retention.ms).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

import structlog

from rules.placement import TRANSACTION_STATE_TOPIC
from storage.batch import build_batch, decode_records, iter_batches
from storage.errors import CorruptRecordError
from storage.log import FlushPolicy, PartitionLog, partition_dir
from storage.log_compaction import CompactionPolicy
from storage.log_protocol import PartitionLogProtocol
from storage.txn_log_records import (
    TxnLogKey,
    TxnLogValue,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)

log = structlog.get_logger(__name__)

READ_CHUNK = 4 << 20
COMPACTION = CompactionPolicy()  # Kafka's topic defaults: delete.retention.ms 1 day, dirty ratio 0.5


class TxnStateLog:
    """The logs of the `__transaction_state` partitions this node hosts."""

    def __init__(self, root: str, *, flush_policy: str = "fsync", flush_interval_ms: int = 1000,
                 segment_bytes: int = 100 * 1024 * 1024, fsync: Callable[[int], None] = os.fsync) -> None:
        self.root = root
        self.flush_policy = FlushPolicy(flush_policy.lower())
        self.flush_interval_ms = flush_interval_ms
        self.segment_bytes = segment_bytes
        self.logs: dict[int, PartitionLogProtocol] = {}
        self._fsync = fsync
        self._executor: ThreadPoolExecutor | None = None

    def open(self, partition: int) -> PartitionLogProtocol:
        self.open_all([partition])
        return self.logs[partition]

    def open_all(self, partitions: Iterable[int]) -> None:
        """Open the logs of `partitions` not open yet, their directories created or recovered concurrently."""
        missing = [p for p in partitions if p not in self.logs]
        paths = [partition_dir(self.root, TRANSACTION_STATE_TOPIC, p) for p in missing]
        logs = PartitionLog.open_many(paths, segment_bytes=self.segment_bytes, flush_policy=self.flush_policy,
                                      flush_interval_ms=self.flush_interval_ms, fsync=self._fsync)
        self.logs.update(zip(missing, logs, strict=True))

    def adopt(self, partition: int, log_: PartitionLogProtocol) -> None:
        """Host a log opened elsewhere (cluster mode: the partition's PostgreSQL log)."""
        self.logs[partition] = log_

    def append(self, partition: int, txn_id: str, value: TxnLogValue | None,
               timestamp_ms: int | None = None) -> asyncio.Future[None]:
        """Append one record; the returned future completes when it is durable (or with the error)."""
        log_ = self.logs.get(partition)
        if log_ is None:
            raise LookupError(f"{TRANSACTION_STATE_TOPIC}-{partition} is not hosted here")
        now = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        batch = build_batch([(encode_txn_key(TxnLogKey(txn_id)), encode_txn_value(value), now)])
        return log_.append(batch).durable

    async def load(self, partition: int) -> dict[str, TxnLogValue | None]:
        """The latest value of every transactional id in the partition's log (None: a tombstone)."""
        log_ = self.open(partition)
        latest: dict[str, TxnLogValue | None] = {}
        offset = log_.log_start_offset
        end = log_.high_watermark
        while offset < end:
            data = log_.read(offset, READ_CHUNK)
            if not data:
                break
            for batch in iter_batches(data):
                if batch.next_offset <= offset:
                    continue
                if not batch.is_control:
                    for record in decode_records(batch):
                        if record.offset < offset or record.key is None:
                            continue
                        key = decode_txn_key(record.key)
                        latest[key.transactional_id] = None if record.value is None else \
                            decode_txn_value(record.value)[1]
                offset = batch.next_offset
            await asyncio.sleep(0)
        if offset < end:
            raise CorruptRecordError(f"{TRANSACTION_STATE_TOPIC}-{partition}: no batch at offset {offset} below {end}")
        return latest

    async def compact(self, now_ms: int, policy: CompactionPolicy = COMPACTION) -> int:
        """Compact the closed segments of every hosted log that is dirty enough; how many were cleaned."""
        cleaned = 0
        for partition, log_ in list(self.logs.items()):  # cluster mode's PgPartitionLog then replaces its rows
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="txn-log-compaction")
            try:
                cleaned += await log_.compact(policy, now_ms, self._executor) is not None
            except Exception as exc:  # one failing log must not stop the others
                log.warning("transaction state log compaction failed", partition=partition, error=repr(exc))
        return cleaned

    async def close(self, partition: int) -> None:
        log_ = self.logs.pop(partition, None)
        if log_ is not None:
            await log_.close()

    async def close_all(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        for partition in list(self.logs):
            try:
                await self.close(partition)
            except Exception:
                log.exception("closing a transaction state log failed", partition=partition)
