"""The share coordinator of this node: the `__share_group_state` partitions it hosts, their logs, and the
share-group state requests (Kafka's ShareCoordinatorService and its persister's Write/Read/Initialize/Delete/
ReadSummary share-group state), over the pure state of coordinator/share/state_store.py.

Each share partition (group, topic id, partition) lives in the `__share_group_state` partition of its coordinator
key (rules/placement.share_state_partition_for). A request is decided on that partition's ShareStateStore; the
records it returns are appended to the partition's log (`<log.dirs>/__share_group_state-<p>/`, Kafka's layout
and bytes: ShareSnapshot / ShareUpdate, storage/share_state_records.py) and replayed with their offsets at once,
so that the next request decides on them (the group commit of one loop turn shares a write and an fsync); the
answer is given only once they are durable. A write that fails is taken back by loading the partition again
from its log, which went back to its last good position (storage/log_repair.py): requests meanwhile get
COORDINATOR_LOAD_IN_PROGRESS. Loading replays every record from the log start offset, at start (all partitions
in local mode) and after a failed write.

Kafka gives the topic cleanup.policy=delete with infinite retention and prunes it: every
share.coordinator.state.topic.prune.interval.ms the records below each partition's `redundant_offset()` (the
oldest offset any share partition's state still needs) are deleted, as a DeleteRecords would (log start offset
moved and checkpointed, whole segments below it removed).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import error_code_for
from coordinator.share.state_store import Answer, Decision, ShareGroupOffset, ShareStateStore, StateRecord, WriteState
from rules.placement import SHARE_GROUP_STATE_TOPIC, share_coordinator_key, share_state_partition_for
from storage import share_state_records
from storage.batch import build_batch, decode_records, iter_batches
from storage.errors import CorruptRecordError
from storage.log import FlushPolicy, PartitionLog, partition_dir
from storage.pg.errors import FencedError

log = structlog.get_logger(__name__)

READ_CHUNK = 4 << 20


@dataclass(frozen=True, slots=True)
class ShareCoordinatorSettings:
    num_partitions: int = 50  # share.coordinator.state.topic.num.partitions
    segment_bytes: int = 100 * 1024 * 1024  # share.coordinator.state.topic.segment.bytes
    prune_interval_ms: int = 300_000  # share.coordinator.state.topic.prune.interval.ms
    updates_per_snapshot: int = 500  # share.coordinator.snapshot.update.records.per.snapshot
    flush_policy: str = "fsync"
    flush_interval_ms: int = 1000

    @classmethod
    def from_config(cls, config: Any) -> ShareCoordinatorSettings:
        return cls(config.share_coordinator_state_topic_num_partitions,
                   config.share_coordinator_state_topic_segment_bytes,
                   config.share_coordinator_state_topic_prune_interval_ms,
                   config.share_coordinator_snapshot_update_records_per_snapshot,
                   config.offsets_log_flush_policy, config.log_flush_interval_ms)


class StatePartition:
    """One hosted `__share_group_state` partition: its log and its state, LOADING until replayed."""

    __slots__ = ("partition", "log", "store", "loading")

    def __init__(self, partition: int, log_: PartitionLog, store: ShareStateStore) -> None:
        self.partition = partition
        self.log = log_
        self.store = store
        self.loading: asyncio.Task | None = None


def _write_error(exc: BaseException) -> ErrorCode:
    """A write's error: cluster mode's FencedError (another node took the partition) is NOT_COORDINATOR, as
    Kafka's coordinator runtime answers for a partition it no longer leads (the persister asks the new one)."""
    return ErrorCode.not_coordinator if isinstance(exc, FencedError) else error_code_for(exc)


def _wall_ms() -> int:
    return int(time.time() * 1000)


class ShareCoordinator:
    def __init__(self, settings: ShareCoordinatorSettings, root: str,
                 partition_exists: Callable[[uuid.UUID, int], bool], wall_ms: Callable[[], int] = _wall_ms) -> None:
        self.settings = settings
        self.root = root
        self.partition_exists = partition_exists  # the metadata image: does this topic id have this partition
        self.wall_ms = wall_ms
        self.partitions: dict[int, StatePartition] = {}
        #: how many partitions __share_group_state has (cluster mode: the topic's, as first created)
        self.num_partitions: Callable[[], int] = lambda: settings.num_partitions
        self._prune: asyncio.Task | None = None
        self._executor: ThreadPoolExecutor | None = None

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self, host_all: bool = True) -> None:
        """Local mode (`host_all`): host every partition; each loads in the background (requests wait for it).
        Cluster mode: the partitions come one by one as this node takes them (`take`)."""
        if host_all:
            for partition in range(self.settings.num_partitions):
                path = partition_dir(self.root, SHARE_GROUP_STATE_TOPIC, partition)
                log_ = PartitionLog.open(path, segment_bytes=self.settings.segment_bytes,
                                         flush_policy=FlushPolicy(self.settings.flush_policy.lower()),
                                         flush_interval_ms=self.settings.flush_interval_ms)
                part = self.partitions[partition] = StatePartition(partition, log_, self._new_store())
                self._load_soon(part)
        if self.settings.prune_interval_ms > 0:
            self._prune = asyncio.ensure_future(self._prune_every(self.settings.prune_interval_ms))

    async def take(self, partition: int, log_: Any) -> None:
        """Cluster mode: host `partition` (its log given, writable at the ownership epoch only), load it from its
        log, then serve it (requests meanwhile wait for the load)."""
        part = self.partitions[partition] = StatePartition(partition, log_, self._new_store())
        self._load_soon(part)
        try:
            await asyncio.shield(part.loading)  # type: ignore[arg-type]
        except BaseException:
            self.lost(partition)  # not left half-loaded: the Reconciler takes it again at its next round
            raise

    async def give_up(self, partition: int) -> None:
        """The hand-off: unloaded (requests get NOT_COORDINATOR), then its log closes once its writes finished."""
        part = self.lost(partition)
        if part is not None:
            await part.log.close()

    def lost(self, partition: int) -> StatePartition | None:
        """Unloaded at once (fenced, or the lease lapsed); the caller closes its log."""
        part = self.partitions.pop(partition, None)
        if part is not None and part.loading is not None:
            part.loading.cancel()
        return part

    async def stop(self) -> None:
        if self._prune is not None:
            self._prune.cancel()
        for part in self.partitions.values():
            if part.loading is not None:
                part.loading.cancel()
            try:
                await part.log.close()
            except Exception:
                log.exception("closing a share-group state log failed", partition=part.partition)
        self.partitions.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    def _new_store(self) -> ShareStateStore:
        return ShareStateStore(self.partition_exists, self.settings.updates_per_snapshot)

    def _load_soon(self, part: StatePartition) -> None:
        part.store = self._new_store()
        part.loading = asyncio.ensure_future(self._load(part))

    async def _load(self, part: StatePartition) -> None:
        """Replay the partition's log from its start offset (the one way its state is made)."""
        log_, store = part.log, part.store
        offset, end = log_.log_start_offset, log_.high_watermark
        count = 0
        while offset < end:
            data = log_.read(offset, READ_CHUNK)
            if not data:
                break
            for batch in iter_batches(data):
                if batch.next_offset <= offset:
                    continue
                if not batch.is_control:
                    for record in decode_records(batch):
                        if record.offset >= offset and record.key is not None:
                            key = share_state_records.decode_key(record.key)
                            value = share_state_records.decode_value(key, record.value)
                            store.replay(record.offset, key, None if value is None else value[1])
                            count += 1
                offset = batch.next_offset
            await asyncio.sleep(0)
        if offset < end:
            raise CorruptRecordError(f"{SHARE_GROUP_STATE_TOPIC}-{part.partition}: no batch at {offset} below {end}")
        part.loading = None
        log.info("share-group state loaded", partition=part.partition, records=count, states=len(store.states))

    # --- requests --------------------------------------------------------------------------------------

    def index_of(self, group: str, topic_id: uuid.UUID, partition: int) -> int:
        """The __share_group_state partition of the share partition (group, topic id, partition)."""
        return share_state_partition_for(share_coordinator_key(group, topic_id, partition), self.num_partitions())

    def partition_of(self, group: str, topic_id: uuid.UUID, partition: int) -> StatePartition:
        return self.partitions[self.index_of(group, topic_id, partition)]

    async def _ready(self, group: str, topic_id: uuid.UUID, partition: int) -> StatePartition | Answer:
        part = self.partitions.get(self.index_of(group, topic_id, partition))
        if part is None:
            return Answer(ErrorCode.not_coordinator, "The share coordinator is not available.")
        if part.loading is not None:
            try:
                await asyncio.shield(part.loading)
            except Exception:
                log.exception("loading share-group state failed", partition=part.partition)
                return Answer(ErrorCode.coordinator_load_in_progress, None)
        return part

    async def _apply(self, part: StatePartition, decision: Decision) -> Answer:
        """Append the decision's records, replay them with their offsets, answer once they are durable."""
        if not decision.records:
            return decision.answer
        now = self.wall_ms()
        pairs = [share_state_records.encode(key, value) for key, value in decision.records]
        try:
            appended = part.log.append(build_batch([(key, value, now) for key, value in pairs]))
        except Exception as exc:
            log.warning("share-group state write refused", partition=part.partition, error=repr(exc))
            return Answer(_write_error(exc), None)
        for i, (key, value) in enumerate(decision.records):
            part.store.replay(appended.base_offset + i, key, value)
        try:
            await appended.durable
        except Exception as exc:
            log.warning("share-group state write failed; reloading the partition", partition=part.partition,
                        error=repr(exc))
            if part.loading is None:
                self._load_soon(part)
            return Answer(_write_error(exc), None)
        return decision.answer

    async def write(self, request: WriteState) -> Answer:
        part = await self._ready(request.group, request.topic_id, request.partition)
        if isinstance(part, Answer):
            return part
        return await self._apply(part, part.store.write(request, self.wall_ms()))

    async def read(self, group: str, topic_id: uuid.UUID, partition: int, leader_epoch: int) -> Answer:
        part = await self._ready(group, topic_id, partition)
        if isinstance(part, Answer):
            return part
        return await self._apply(part, part.store.read(group, topic_id, partition, leader_epoch, self.wall_ms()))

    async def initialize(self, group: str, topic_id: uuid.UUID, partition: int, state_epoch: int,
                         start_offset: int) -> Answer:
        part = await self._ready(group, topic_id, partition)
        if isinstance(part, Answer):
            return part
        return await self._apply(part, part.store.initialize(group, topic_id, partition, state_epoch, start_offset,
                                                             self.wall_ms()))

    async def delete(self, group: str, topic_id: uuid.UUID, partition: int) -> Answer:
        part = await self._ready(group, topic_id, partition)
        if isinstance(part, Answer):
            return part
        return await self._apply(part, part.store.delete(group, topic_id, partition))

    async def summary(self, group: str, topic_id: uuid.UUID, partition: int) -> Answer:
        part = await self._ready(group, topic_id, partition)
        if isinstance(part, Answer):
            return part
        return part.store.summary(group, topic_id, partition)

    def known_state(self, group: str, topic_id: uuid.UUID, partition: int) -> ShareGroupOffset | None:
        """The share partition's durable state if its `__share_group_state` partition is loaded here (no wait:
        the operations views read it between requests), else None."""
        part = self.partitions.get(share_state_partition_for(share_coordinator_key(group, topic_id, partition),
                                                             self.settings.num_partitions))
        if part is None or part.loading is not None:
            return None
        return part.store.states.get((group, topic_id, partition))

    # --- pruning ---------------------------------------------------------------------------------------

    async def _prune_every(self, interval_ms: int) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            await self.prune()

    async def prune(self) -> int:
        """Delete the records every hosted partition no longer needs (below its redundant offset); how many
        segments went."""
        deleted = 0
        for part in list(self.partitions.values()):
            if part.loading is not None:
                continue
            log_ = part.log
            target = min(part.store.redundant_offset(), log_.high_watermark)
            if target <= log_.log_start_offset:
                continue
            try:
                log_.advance_log_start(target)
                await log_.checkpoint_log_start()
                whole = sum(1 for nxt in log_.segment_infos()[1:] if nxt.base_offset <= log_.log_start_offset)
                if whole:
                    if self._executor is None:
                        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="share-state-prune")
                    deleted += await log_.delete_oldest(whole, self._executor)
            except Exception as exc:  # one failing log must not stop the others
                log.warning("pruning share-group state failed", partition=part.partition, error=repr(exc))
        return deleted


__all__ = ["ShareCoordinator", "ShareCoordinatorSettings", "StatePartition", "StateRecord"]
