"""Topic logs and the operations on them: create, delete, append, plus shared state.

One PartitionLog per partition under `<log.dirs>/<topic>-<partition>/` (Kafka's
layout), opened at start (with the producer state rebuilt from it) and closed, i.e.
flushed, at stop. Topic metadata is the TopicCatalog (persisted separately).

Durability: every topic log uses `log.flush.policy`. `fsync` (default): a group
flush is fsync'ed before its appends are acknowledged to acks=-1 producers or become
readable; `none`: written to the OS first (survives kill -9), fsync'ed every
`log.flush.interval.ms`. acks=1 is answered once the offsets are assigned, without
waiting for the write (Kafka's acks=1: the leader has it). acks=0 gets no answer.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.data_plane import appends, ownership, replication, topic_configs, topic_reconfig
from coordinator.data_plane.appends import Appended, TxnVerifier
from coordinator.data_plane.partition import Partition, discard_local
from coordinator.data_plane.producer_ids import ProducerIdAllocator
from coordinator.data_plane.purgatory import FetchPurgatory
from coordinator.data_plane.record_budget import EXCESSIVE_BATCH, RecordBudget, topic_records
from coordinator.data_plane.retention import RetentionManager
from coordinator.data_plane.topic_catalog import TopicCatalog, TopicInfo, topic_name_error
from coordinator.data_plane.topic_configs import EffectiveConfig
from coordinator.data_plane.topic_dirs import remove_renamed_dirs, undo_renames
from coordinator.data_plane.validation import WalkBudget
from coordinator.errors import (
    InvalidPartitions,
    InvalidTopic,
    KafkaError,
    PolicyViolation,
    TopicAlreadyExists,
    TopicDeletionDisabled,
)
from storage.compression import MAX_DECOMPRESSED_BYTES
from storage.errors import OffsetOutOfRangeError, StorageError
from storage.log import PartitionLog, partition_dir
from storage.log_dirs import delete_dir_path, is_delete_dir
from storage.log_protocol import PartitionLogProtocol

if TYPE_CHECKING:
    from coordinator.config import Config

log = structlog.get_logger(__name__)

MAX_PARTITIONS_PER_TOPIC = 1000  # each partition holds 3 open files; Kafka has no such cap


@dataclass(frozen=True)
class DataPlaneSettings:
    log_dir: str
    node_id: int = 1
    auto_create_topics: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    segment_bytes: int = 1 << 30
    message_max_bytes: int = 1048588
    flush_policy: str = "fsync"
    flush_interval_ms: int = 1000
    retention_ms: int = 604800000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    retention_check_interval_ms: int = 300000
    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES
    fetch_max_bytes: int = 57671680  # Kafka's fetch.max.bytes default, 55 MiB

    @classmethod
    def from_config(cls, config: Config) -> DataPlaneSettings:
        return cls(config.log_dirs, config.node_id, config.auto_create_topics_enable, config.num_partitions,
                   config.default_replication_factor, config.log_segment_bytes, config.message_max_bytes,
                   config.log_flush_policy.lower(), config.log_flush_interval_ms, config.log_retention_time_ms,
                   config.log_retention_bytes, config.log_cleanup_policy, config.log_retention_check_interval_ms,
                   config.message_max_decompressed_bytes, config.fetch_max_bytes)


class DataPlane:
    def __init__(self, settings: DataPlaneSettings, catalog: TopicCatalog,
                 producer_ids: ProducerIdAllocator | None = None, take_all: bool = True) -> None:
        """`take_all`: local mode, every partition hosted; else those taken (data_plane/ownership.py)."""
        self.settings = settings
        self.take_all = take_all
        self.catalog = catalog
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.purgatory = FetchPurgatory()
        # KIP-890: set by the transaction runtime; consulted for a batch that would begin a transaction
        self.txn_verifier: TxnVerifier | None = None
        self.producer_ids = ProducerIdAllocator(settings.log_dir) if producer_ids is None else producer_ids
        self.base_configs = topic_configs.defaults(settings.segment_bytes, settings.message_max_bytes,
                                                   settings.retention_ms, settings.retention_bytes,
                                                   settings.cleanup_policy)
        catalog.on_reconfigured = lambda topic: topic_reconfig.apply(self.partitions, self.base_configs, topic)
        self.retention = RetentionManager(lambda part: self.partitions.get(part.key) is part,
                                          lambda: list(self.partitions.values()),
                                          settings.retention_check_interval_ms)
        #: the live brokers' ids (a manual assignment may name them, a replication factor may reach their number):
        #: local mode this node alone; cluster mode's node plugs in its view's
        self.live_brokers: Callable[[], list[int]] = lambda: [settings.node_id]
        self._started = False

    # ------------------------------------------------------------ life cycle
    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._remove_deleted_dirs()
        for topic in self.catalog.all():
            if not topic.internal:
                self._open_topic(topic, fresh=False)
        log.info("data_plane.started", topics=sum(1 for t in self.catalog.all() if not t.internal),
                 partitions=len(self.partitions), flush_policy=self.settings.flush_policy)
        self.retention.start()

    async def stop(self) -> None:
        await self.retention.stop()
        partitions, self.partitions = list(self.partitions.values()), {}
        results = await asyncio.gather(*(p.log.close() for p in partitions), return_exceptions=True)
        for part, result in zip(partitions, results):
            if isinstance(result, BaseException):
                log.error("data_plane.close_failed", topic=part.topic, partition=part.index, error=repr(result))
        self._started = False

    def _remove_deleted_dirs(self) -> None:
        root = self.settings.log_dir
        if not os.path.isdir(root):
            return
        for name in os.listdir(root):
            if is_delete_dir(name):
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)

    def _open_topic(self, topic: TopicInfo, fresh: bool) -> list[Partition]:
        opened = self._open_logs(topic, fresh)
        for part in opened:
            self.partitions[part.key] = part
        return opened

    def _open_logs(self, topic: TopicInfo, fresh: bool) -> list[Partition]:
        """Open (creating) the topic's partition logs; blocking I/O, run off the loop for new topics."""
        config = EffectiveConfig.resolve(topic.config_map(), self.base_configs)
        if not self.take_all:  # cluster mode: partitions are hosted once taken (take_partition)
            return []
        paths = [partition_dir(self.settings.log_dir, topic.name, index) for index in range(topic.partitions)]
        if fresh:
            for path in paths:
                if os.path.exists(path):  # left over from a delete cut short by a crash
                    shutil.rmtree(path)
        logs = self._open_many(paths, config)  # concurrently: each new or recovered directory's fsyncs
        try:
            opened = [Partition(topic.name, index, log_, config) for index, log_ in enumerate(logs)]
            for part in opened if not fresh else ():
                batches = part.rebuild_producers()
                if batches:
                    log.info("data_plane.producer_state.rebuilt", topic=topic.name, partition=part.index,
                             producers=len(part.producers.entries), batches=batches)
        except BaseException:
            for log_ in logs:
                log_.close_sync()
            raise
        return opened

    def new_log(self, topic: str, index: int, config: EffectiveConfig) -> PartitionLog:
        """Open (and recover the tail of) a topic partition's local log under log.dirs."""
        return self._open_many([partition_dir(self.settings.log_dir, topic, index)], config)[0]

    def _open_many(self, paths: list[str], config: EffectiveConfig) -> list[PartitionLog]:
        return PartitionLog.open_many(paths, segment_bytes=config.segment_bytes,
                                      flush_policy=self.settings.flush_policy,
                                      flush_interval_ms=self.settings.flush_interval_ms)

    def _open_new(self, topics: list[TopicInfo]) -> list[list[Partition] | Exception]:
        """In a worker thread: each new topic's logs, or the error that stopped them (say the
        disk or the open-file limit refused them)."""
        out: list[list[Partition] | Exception] = []
        for topic in topics:
            try:
                out.append(self._open_logs(topic, fresh=True))
            except Exception as exc:
                out.append(exc)
        return out

    # ---------------------------------------------------------------- topics
    def partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    async def take_partition(self, topic: str, index: int, log_: PartitionLogProtocol,
                             epoch: int | None = None) -> Partition:
        return await ownership.take_partition(self, topic, index, log_, epoch)

    async def give_up_partition(self, topic: str, index: int) -> None:
        await ownership.give_up_partition(self, topic, index)

    def lose_partition(self, topic: str, index: int) -> None:
        ownership.lose_partition(self, topic, index)

    def check_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                    assignments: list[tuple[int, list[int]]] | None = None,
                    configs: dict[str, str | None] | None = None) -> tuple[int, dict[str, str], int]:
        """Kafka's checks and codes for a new topic: (partition count, config overrides, replication factor), or a
        KafkaError. The factor is checked against the live brokers (replication.py)."""
        if not self._started:
            raise KafkaError("the data plane is not started", ErrorCode.unknown_server_error)
        reason = topic_name_error(name)
        if reason:
            raise InvalidTopic(f"Topic name {name!r} is illegal: {reason}")
        if self.catalog.taken(name):
            raise TopicAlreadyExists(f"Topic '{name}' already exists.")
        other = self.catalog.colliding(name)
        if other is not None:
            raise InvalidTopic(f"Topic '{name}' collides with existing topic: {other}")
        brokers = self.live_brokers()
        if assignments:
            factor = replication.check_assignments(assignments, num_partitions, replication_factor, set(brokers))
            num_partitions = len(assignments)
        else:
            factor = replication.requested(replication_factor, self.settings.default_replication_factor)
            if num_partitions == -1:
                num_partitions = self.settings.num_partitions
            if num_partitions <= 0:
                raise InvalidPartitions("Number of partitions was set to an invalid non-positive value.")
            replication.check_new_topic(factor, len(brokers))
        if num_partitions > MAX_PARTITIONS_PER_TOPIC:
            raise InvalidPartitions(f"Number of partitions {num_partitions} is above this server's limit of "
                                    f"{MAX_PARTITIONS_PER_TOPIC} per topic.")
        return num_partitions, topic_configs.validate(configs or {}), factor

    def reserve_topic(self, name: str, *args: Any, **kwargs: Any) -> TopicInfo:
        """check_topic, then take the name: the topic to pass to `create_topics`."""
        partitions, overrides, factor = self.check_topic(name, *args, **kwargs)
        return self.catalog.reserve(name, partitions, overrides, factor)

    async def create_topics(self, topics: list[TopicInfo]) -> list[BaseException | None]:
        """Create reserved topics together: their logs opened in a worker thread, one catalog
        write for all of them (off the loop), then visible. Per topic: None, or why it failed."""
        loop = asyncio.get_running_loop()
        try:
            opened = await loop.run_in_executor(None, self._open_new, topics)
            made = [(t, parts) for t, parts in zip(topics, opened) if not isinstance(parts, BaseException)]
            try:
                lost = await self.catalog.commit([t for t, _ in made])
            except BaseException as exc:
                await loop.run_in_executor(None, discard_local, [p for _, parts in made for p in parts])
                log.warning("data_plane.topic.catalog_write_failed", topics=len(made), error=repr(exc))
                return [exc for _ in topics]
        finally:
            self.catalog.release([t.name for t in topics])
        if lost:  # cluster mode: another node created these names first; theirs are listed now
            await loop.run_in_executor(None, discard_local, [p for t, parts in made if t.name in lost
                                                                 for p in parts])
            made = [(t, parts) for t, parts in made if t.name not in lost]
            opened = [TopicAlreadyExists(f"Topic '{t.name}' already exists.") if t.name in lost else parts
                      for t, parts in zip(topics, opened)]
        for topic, parts in made:
            for part in parts:
                self.partitions[part.key] = part
            log.info("data_plane.topic.created", topic=topic.name, topic_id=str(topic.topic_id),
                     partitions=topic.partitions, configs=topic.config_map())
        return [parts if isinstance(parts, BaseException) else None for parts in opened]

    def auto_create_names(self, names: list[str]) -> tuple[list[TopicInfo], set[str]]:
        """Reserve what auto.create.topics.enable may create among unknown `names`: (reserved
        topics to pass to `create_topics`, names another request is creating or deleting now).
        A name that may not be created is logged and left out; past MAX_RECORDS_PER_USER_OP
        (record_budget.py) none is created, as Kafka's one CreateTopics for them all fails."""
        if not self.settings.auto_create_topics or not self._started:
            return [], set()  # before start() (in-process tests of other handlers) no logs exist
        reserved: list[TopicInfo] = []
        busy: set[str] = set()
        budget = RecordBudget()
        for name in dict.fromkeys(names):
            if self.catalog.get(name) is None and self.catalog.taken(name):
                busy.add(name)
                continue
            try:
                topic = self.reserve_topic(name)
            except KafkaError as exc:
                log.info("data_plane.topic.auto_create_failed", topic=name, error=str(exc))
                continue
            reserved.append(topic)
            if not budget.take(topic_records(topic.partitions, len(topic.configs))):
                self.catalog.release([t.name for t in reserved])
                log.warning("data_plane.topic.auto_create_refused", topics=len(reserved),
                            records=budget.used, limit=budget.limit, error=EXCESSIVE_BATCH)
                return [], busy
        return reserved, busy

    def detach_topic(self, topic: TopicInfo) -> list[Partition]:
        """Forget the topic at once (no await: two deletes cannot interleave); `delete_topics`
        then makes that durable and removes its partitions, which stop taking requests now.

        Each partition directory is renamed first, before any await, to its `-delete` name
        (storage/log_dirs.py, bounded to 255 bytes as Kafka's): a topic re-created under this
        name at once (say by a pipelined CreateTopics or auto-creation) gets fresh directories
        that the removal, which only ever removes renamed directories, cannot touch. If a
        rename fails, the renames done are undone and the topic stays (KAFKA_STORAGE_ERROR).
        A rename is a metadata change without fsync, cheap enough for the loop."""
        if topic.internal:
            raise TopicDeletionDisabled(f"Topic {topic.name} is a kafka internal topic and is not allowed to be "
                                        "marked for deletion.")
        parts = [self.partitions[(topic.name, i)] for i in range(topic.partitions)
                 if (topic.name, i) in self.partitions]
        self._rename_for_deletion(topic, parts)
        self.catalog.drop(topic.name)
        for part in parts:
            del self.partitions[part.key]
            self.purgatory.wake(part.key)
        log.info("data_plane.topic.deleted", topic=topic.name, topic_id=str(topic.topic_id))
        return parts

    def _rename_for_deletion(self, topic: TopicInfo, parts: list[Partition]) -> None:
        renamed: list[tuple[Partition, str]] = []
        for part in parts:
            original = part.log.path
            doomed = delete_dir_path(self.settings.log_dir, topic.name, part.index, topic.topic_id.hex)
            try:
                part.log.rename_dir(doomed)
            except FileNotFoundError:  # nothing on disk to remove; never write to the old path again
                part.log.moved_to(doomed)
            except OSError as exc:
                log.warning("data_plane.topic.rename_failed", topic=topic.name, partition=part.index,
                            error=repr(exc))
                undo_renames(topic, renamed)
                raise KafkaError(f"Cannot delete topic {topic.name}: renaming the directory of partition "
                                 f"{part.index} failed: {exc.strerror or exc}", ErrorCode.kafka_storage_error) from exc
            renamed.append((part, original))

    async def delete_topics(self, detached: list[tuple[TopicInfo, list[Partition]]]) -> None:
        """Write the catalog without the detached topics (once, off the loop), then close
        (flush) each log and remove its renamed directory in a worker thread.

        A crash before the catalog write lists the topics again at the next start, with
        empty logs (their renamed directories are removed at start); a crash before the
        rename leaves an orphan directory, wiped if a topic of that name is created again.
        """
        await self.catalog.commit()
        loop = asyncio.get_running_loop()
        for topic, parts in detached:
            for part in parts:
                try:
                    await part.log.close()
                except Exception as exc:  # a failed log still gets removed
                    log.warning("data_plane.topic.close_failed", topic=topic.name, partition=part.index,
                                error=repr(exc))
            await loop.run_in_executor(None, remove_renamed_dirs, parts)

    # ------------------------------------------------------------ delete records
    async def delete_records(self, part: Partition, offset: int) -> int:
        """DeleteRecords for one partition (Kafka's Partition.deleteRecordsOnLeader): move the log
        start offset to ``offset`` (-1: the high watermark), durably; returns the low watermark.

        The segments wholly below it are deleted by a retention check started at once."""
        if not part.config.retention.delete:
            raise PolicyViolation(f"Records of partition {part.topic}-{part.index} can not be deleted due to "
                                  "the configured policy")
        lg = part.log
        target = lg.high_watermark if offset == -1 else offset
        if target < 0:
            raise OffsetOutOfRangeError(f"The offset {offset} for partition {part.topic}-{part.index} is not valid")
        low = lg.advance_log_start(target)
        try:
            await lg.checkpoint_log_start()
        except OSError as exc:
            log.error("data_plane.log_start.checkpoint_failed", topic=part.topic, partition=part.index,
                      error=repr(exc))
            raise StorageError(f"cannot persist the log start offset of {part.topic}-{part.index}: {exc}") from exc
        self.retention.soon(part)
        return low

    # ---------------------------------------------------------------- append
    def walk_budget(self) -> WalkBudget:
        """The record bytes one Produce request may make us walk (shared by its batches)."""
        return WalkBudget(self.settings.max_decompressed_bytes)

    def append(self, part: Partition, data: bytes | None, produce_version: int,
               budget: WalkBudget | None = None, transactional_id: str | None = None) -> Appended:
        """Validate one producer batch and append it (or recognise a retried duplicate).

        Raises a KafkaError (or a storage error carrying its Kafka code) and appends
        nothing when the batch is rejected. `budget`: the request's walk budget (see
        validation), a fresh one when None; `transactional_id`: the Produce request's, for
        `txn_verifier` (see appends.py).
        """
        return appends.append_batch(self, part, data, produce_version, budget, transactional_id)

    def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> Awaitable[None]:
        """Append a transaction marker (COMMIT or ABORT control batch) for the producer and end its transaction
        in the partition; the awaitable completes once the marker is durable (the LSO then moves and
        read_committed delayed fetches wake). Raises (at once or from the awaitable) a KafkaError:
        NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION when the partition is not hosted here,
        INVALID_PRODUCER_EPOCH for an epoch below the producer's, TRANSACTION_COORDINATOR_FENCED for a
        coordinator epoch below the last one seen; or a storage error (KAFKA_STORAGE_ERROR)."""
        return appends.write_marker(self, topic, partition, producer_id, producer_epoch, commit, coordinator_epoch)
