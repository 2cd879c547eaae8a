"""The periodic retention check of topic logs (Kafka's LogManager cleanupLogs task).

Every ``log.retention.check.interval.ms`` each topic partition is checked once: the
rules of ``storage/retention_rules.py`` (time, size, log start offset) pick a prefix of
segments, ``PartitionLog.delete_oldest`` drops them from the log on the event loop (rolling
first to an empty segment at the log end offset when they are all of them, so an idle
partition keeps no expired data) and closes and unlinks their files on this manager's own
worker thread, so a slow unlink of a large file delays neither the loop nor the flush
threads. One partition is handled at a time; DeleteRecords asks for an early check of
its partition (``soon``). Topics with ``compact`` in cleanup.policy are then compacted
(``PartitionLog.compact``) on the same thread. A failure (a disk error, or a roll that
cannot open its files, which leaves the log as it was) is logged and the partition is
tried again at the next check; it never stops the task.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import structlog

from coordinator.data_plane.partition import Partition
from storage.retention_rules import plan

log = structlog.get_logger(__name__)
YIELD_EVERY = 64


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class RetentionManager:
    def __init__(self, live: Callable[[Partition], bool], partitions: Callable[[], list[Partition]],
                 interval_ms: int, clock: Callable[[], int] = wall_clock_ms) -> None:
        self._live = live
        self._partitions = partitions
        self.interval_s = interval_ms / 1000.0
        self.clock = clock
        self._lock = asyncio.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._task: asyncio.Task | None = None
        self._early: set[asyncio.Task] = set()
        self._early_keys: set[tuple[str, int]] = set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="log-retention")

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._early) if t is not None]
        self._task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            started = time.monotonic()
            deleted = await self.check_all()
            if deleted:
                log.info("data_plane.retention.checked", segments_deleted=deleted,
                         ms=round((time.monotonic() - started) * 1000, 1))

    async def check_all(self) -> int:
        """One pass over every partition; returns how many segments were deleted."""
        total = 0
        for i, part in enumerate(self._partitions()):
            total += await self.check(part)
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                await asyncio.sleep(0)  # thousands of partitions: let requests run between slices
        return total

    def soon(self, part: Partition) -> None:
        """Check ``part`` now, in the background (after DeleteRecords moved its log start offset);
        at most one such check per partition waits at a time, however many requests ask."""
        if part.key in self._early_keys:
            return
        self._early_keys.add(part.key)

        async def early() -> None:
            async with self._lock:
                self._early_keys.discard(part.key)  # from here on, a new request needs a new check
                await self._check(part)

        task = asyncio.get_running_loop().create_task(early())
        self._early.add(task)
        task.add_done_callback(self._early.discard)

    async def check(self, part: Partition) -> int:
        """Delete what retention allows in ``part`` (then compact it); returns how many segments went."""
        async with self._lock:
            return await self._check(part)

    async def _check(self, part: Partition) -> int:
        if not self._live(part):
            return 0  # its topic was deleted meanwhile
        lg = part.log
        now = self.clock()
        decision = plan(lg.segment_infos(), part.config.retention, now_ms=now,
                        log_start_offset=lg.log_start_offset, high_watermark=lg.high_watermark,
                        log_end_offset=lg.log_end_offset)
        deleted = 0
        try:
            if decision.count:
                deleted = await lg.delete_oldest(decision.count, self._worker())
                log.info("data_plane.retention.deleted", topic=part.topic, partition=part.index,
                         segments=deleted, reasons=list(decision.reasons), log_start_offset=lg.log_start_offset)
            if part.config.compaction is not None:
                # Kafka's cleaner: never past the LSO, records of aborted transactions dropped
                aborted = [(t.producer_id, t.first_offset, t.last_offset) for t in part.producers.txns.aborted]
                await lg.compact(part.config.compaction, now, self._worker(),
                                 last_stable_offset=part.last_stable_offset, aborted_txns=aborted)
        except Exception as exc:  # a disk error must not stop retention of other logs
            log.warning("data_plane.retention.failed", topic=part.topic, partition=part.index, error=repr(exc))
        return deleted

    def _worker(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-retention")
        return self._executor
