"""The transaction coordinator of this node: the `__transaction_state` partitions it hosts and the
transactional APIs' requests, driven through the pure decisions of coordinator/transactions/.

Each request finds its partition (transaction_partition_for); a partition that is not hosted here answers
NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS (both retriable: clients look the
coordinator up again). A decision (`TxnStep`) that writes a record is answered once the record is durable
(`step.written` applies it, as the replay of loading would). EndTxn's PrepareCommit/PrepareAbort starts the
markers (markers.py) in the background; when they are all written the CompleteCommit/CompleteAbort record
is written. EndTxn's answer waits for that, bounded by END_TXN_MARKER_WAIT_MS (the outcome is decided at
PrepareX: waiting only spares the client's next transaction a CONCURRENT_TRANSACTIONS back-off).
Every `abort_interval_ms` transactions past their timeout are aborted (with an epoch bump, as Kafka), every
`expire_interval_ms` idle transactional ids expire, and the logs' closed segments are compacted when dirty
enough.
After a partition loads, transactions found in PrepareCommit/PrepareAbort have their markers sent again
(Kafka's recovery after a coordinator failover or a crash).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from enum import Enum
from typing import Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.data_plane.producer_ids import ProducerIdAllocator
from coordinator.errors import error_code_for, logged_by_storage
from coordinator.transactions.descriptions import TxnDescription, TxnListed, TxnListing, list_transactions
from coordinator.transactions.operations import TxnOps, TxnSettings
from coordinator.transactions.runtime.markers import RETRY_BACKOFF_MS, MarkerWriter, send_markers
from coordinator.transactions.runtime.settings import TxnRuntimeSettings
from coordinator.transactions.runtime.state_log import TxnStateLog
from coordinator.transactions.steps import MarkerJob, TxnAnswer, TxnStep
from coordinator.transactions.txn_metadata import TxnMetadata
from rules.placement import transaction_partition_for
from storage.log_protocol import PartitionLogProtocol

log = structlog.get_logger(__name__)

#: ReplicaManager: the coordinator's verification answers as a Produce request's errors (retriable ones as
#: NOT_ENOUGH_REPLICAS, which older clients retry without a metadata refresh)
VERIFY_ERRORS = {
    ErrorCode.producer_fenced: ErrorCode.invalid_producer_epoch,
    ErrorCode.transaction_abortable: ErrorCode.invalid_txn_state,
    ErrorCode.concurrent_transactions: ErrorCode.not_enough_replicas,
    ErrorCode.coordinator_load_in_progress: ErrorCode.not_enough_replicas,
    ErrorCode.coordinator_not_available: ErrorCode.not_enough_replicas,
    ErrorCode.not_coordinator: ErrorCode.not_enough_replicas,
}
#: EndTxn is answered once PrepareCommit/PrepareAbort is durable (the outcome is decided then, as in Kafka), but
#: not before the markers and the completion record are written, up to this long: a client's next transaction
#: would otherwise meet the transaction still completing (CONCURRENT_TRANSACTIONS) and back off 20 ms.
END_TXN_MARKER_WAIT_MS = 500
COMPACTION_INTERVAL_MS = 15_000  # Kafka's log.cleaner.backoff.ms: how often closed segments are looked at


def _wall_ms() -> int:
    return int(time.time() * 1000)


class TxnListener(Protocol):
    """Told of what ends transactions (orphans.OrphanedOffsets: pending offsets no marker will end)."""

    def transaction_ended(self, md: TxnMetadata, coordinator_epoch: int) -> None: ...

    def sweep_soon(self) -> None: ...

    def sweep(self) -> int: ...


class Loading(Enum):
    LOADING = "loading"
    ACTIVE = "active"


class TxnPartition:
    """One hosted `__transaction_state` partition: its transactions and the decisions over them."""

    __slots__ = ("partition", "coordinator_epoch", "state", "txns", "ops", "tasks")

    def __init__(self, partition: int, coordinator_epoch: int, ops: TxnOps, txns: dict[str, TxnMetadata]) -> None:
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch
        self.state = Loading.LOADING
        self.txns = txns
        self.ops = ops
        self.tasks: set[asyncio.Task[None]] = set()  # markers in flight, cancelled when the partition goes


class TransactionCoordinator:
    def __init__(self, settings: TxnRuntimeSettings, state_log: TxnStateLog, markers: MarkerWriter | None,
                 producer_ids: ProducerIdAllocator, wall_ms: Callable[[], int] = _wall_ms) -> None:
        self.settings = settings
        self.state_log = state_log
        self.markers = markers  # set by the app once the data plane and the group coordinator exist
        self.producer_ids = producer_ids
        self.wall_ms = wall_ms
        self.partitions: dict[int, TxnPartition] = {}
        self._periodic: list[asyncio.Task[None]] = []
        self.listener: TxnListener | None = None  # set by wiring.py once the group coordinator exists
        #: cluster mode: asks the node coordinating a transaction hosted elsewhere (cluster/txn_verification.py)
        self.remote_verification: Callable[[str, int, int, str, int], Awaitable[ErrorCode | None]] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self, owned: Iterable[int] | None = None) -> None:
        """Local mode: host every partition (`owned` None), then run the timers; cluster mode calls
        `start_timers` alone and takes its partitions one by one (`take`)."""
        partitions = list(range(self.settings.num_partitions) if owned is None else owned)
        self.state_log.open_all(partitions)
        for partition in partitions:
            self._load_in_background(partition, 0)
        self.start_timers()

    def start_timers(self) -> None:
        """The periodic aborts of timed-out transactions and expiries of idle ids, over the hosted partitions."""
        if self._periodic:
            return
        self._periodic = [
            asyncio.ensure_future(self._every(self.settings.abort_interval_ms, self.abort_timed_out)),
            asyncio.ensure_future(self._every(self.settings.abort_interval_ms, self._sweep_orphans)),
            asyncio.ensure_future(self._every(self.settings.expire_interval_ms, self.expire_ids)),
            asyncio.ensure_future(self._every(COMPACTION_INTERVAL_MS, self._compact)),
        ]

    async def take(self, partition: int, coordinator_epoch: int, log_: PartitionLogProtocol | None = None) -> None:
        """Cluster mode: host `partition` (its log given) at the ownership epoch, load it, then serve."""
        if log_ is not None:
            self.state_log.adopt(partition, log_)
        else:
            self.state_log.open(partition)
        part = self._register(partition, coordinator_epoch)
        try:
            await self._load(part)
        except BaseException:
            if self.partitions.get(partition) is part:
                del self.partitions[partition]  # the Reconciler takes it again at its next round
            raise

    async def give_up(self, partition: int) -> None:
        self._unload(partition)
        await self.state_log.close(partition)

    def lost(self, partition: int) -> None:
        self._unload(partition)
        self.state_log.logs.pop(partition, None)

    async def stop(self) -> None:
        for task in self._periodic:
            task.cancel()
        for partition in list(self.partitions):
            self._unload(partition)
        await self.state_log.close_all()

    def _unload(self, partition: int) -> None:
        part = self.partitions.pop(partition, None)
        if part is not None:
            part.ops.unload()
            for task in list(part.tasks):
                task.cancel()

    def _load_in_background(self, partition: int, coordinator_epoch: int) -> None:
        part = self._register(partition, coordinator_epoch)  # LOADING from now on: requests hear so
        task = asyncio.ensure_future(self._load(part))
        task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or
                               log.error("transaction state partition failed to load", partition=partition,
                                         exc_info=t.exception()))

    def _register(self, partition: int, coordinator_epoch: int) -> TxnPartition:
        txns: dict[str, TxnMetadata] = {}
        ops = TxnOps(txns, self.wall_ms, TxnSettings(max_timeout_ms=self.settings.max_timeout_ms,
                                                     id_expiration_ms=self.settings.id_expiration_ms),
                     coordinator_epoch)
        part = TxnPartition(partition, coordinator_epoch, ops, txns)
        self.partitions[partition] = part
        return part

    async def _load(self, part: TxnPartition) -> None:
        started = time.monotonic()
        partition = part.partition
        latest = await self.state_log.load(partition)
        if self.partitions.get(partition) is not part:
            return  # given up while loading
        for txn_id, value in latest.items():
            part.ops.replay(txn_id, value)
        part.state = Loading.ACTIVE
        log.info("transaction state partition loaded", partition=partition, transactions=len(part.txns),
                 coordinator_epoch=part.coordinator_epoch, seconds=round(time.monotonic() - started, 3))
        for job in part.ops.recovering():
            self._start_markers(part, job)
        if self.listener is not None:
            self.listener.sweep_soon()  # offsets a restart found pending for transactions now known over

    # --------------------------------------------------------------- lookups
    def partition_of(self, txn_id: str) -> int:
        return transaction_partition_for(txn_id, self.settings.num_partitions)

    def _active(self, txn_id: str) -> TxnPartition | ErrorCode:
        part = self.partitions.get(self.partition_of(txn_id))
        if part is None:
            return ErrorCode.not_coordinator
        if part.state is not Loading.ACTIVE:
            return ErrorCode.coordinator_load_in_progress
        return part

    def hosts(self, txn_id: str) -> bool:
        return self.partition_of(txn_id) in self.partitions

    # ------------------------------------------------------------------ APIs
    async def init_producer_id(self, txn_id: str, timeout_ms: int, producer_id: int = -1,
                               producer_epoch: int = -1) -> TxnAnswer:
        if not txn_id:  # Kafka checks these before it looks for the transaction's partition
            return TxnAnswer(ErrorCode.invalid_request)
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            return TxnAnswer(ErrorCode.invalid_transaction_timeout)
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return TxnAnswer(part)
        try:
            await self.producer_ids.ensure_available()
        except Exception as exc:
            return TxnAnswer(error_code_for(exc))
        part = self._active(txn_id)  # the partition may have moved while the block was reserved
        if isinstance(part, ErrorCode):
            return TxnAnswer(part)
        step = part.ops.init_producer_id(txn_id, timeout_ms, producer_id, producer_epoch,
                                         new_producer_id=self.producer_ids.take)
        return await self._drive(part, step)

    async def add_partitions(self, txn_id: str, producer_id: int, producer_epoch: int,
                             partitions: list[tuple[str, int]]) -> ErrorCode:
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return part
        return (await self._drive(part, part.ops.add_partitions(txn_id, producer_id, producer_epoch,
                                                                partitions))).error

    def verification(self, txn_id: str, producer_id: int, producer_epoch: int, topic: str,
                     partition: int) -> ErrorCode | None:
        """KIP-890: the coordinator's answer to a partition leader's AddPartitionsToTxn verify_only for one
        partition (handleVerifyPartitionsInTransaction): NONE when the partition is in the producer's ongoing
        transaction, else TRANSACTION_ABORTABLE, PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING,
        CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS... Each caller maps it as Kafka's does (`verify`
        for Produce, the TxnOffsetCommit handler for its versions). None: the transaction is not coordinated
        here (cluster mode: another node's), so no verdict."""
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return None if part is ErrorCode.not_coordinator else part
        step = part.ops.add_partitions(txn_id, producer_id, producer_epoch, [(topic, partition)], verify_only=True)
        errors = step.partition_errors or {}
        return errors.get((topic, partition), step.error or ErrorCode.none)

    def verify(self, txn_id: str, producer_id: int, producer_epoch: int, topic: str,
               partition: int) -> ErrorCode | None:
        """KIP-890: a transactional batch may begin a transaction in a partition only once the partition
        was added to it; the coordinator's answer as ReplicaManager turns it into a Produce error. Only
        transactions coordinated here are checked (cluster mode: None, no objection, for the others)."""
        code = self.verification(txn_id, producer_id, producer_epoch, topic, partition)
        if code is None:
            return None
        code = VERIFY_ERRORS.get(code, code)
        return None if code is ErrorCode.none else code

    async def end_txn(self, txn_id: str, producer_id: int, producer_epoch: int, commit: bool) -> ErrorCode:
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return part
        answer = await self._drive(part, part.ops.end_txn(txn_id, producer_id, producer_epoch, commit),
                                   wait_markers_s=END_TXN_MARKER_WAIT_MS / 1000)
        return answer.error

    def describe(self, txn_id: str) -> TxnDescription:
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return TxnDescription(txn_id, part)
        return part.ops.describe(txn_id)

    def list_transactions(self, states: Iterable[str], producer_ids: Iterable[int], duration_ms: int
                          ) -> TxnListing:
        """Every hosted partition's matches; COORDINATOR_LOAD_IN_PROGRESS (and nothing) while one loads."""
        states, producer_ids = tuple(states), tuple(producer_ids)
        unknown = list_transactions({}, 0, states).unknown_state_filters
        found: list[TxnListed] = []
        for part in list(self.partitions.values()):
            if part.state is not Loading.ACTIVE:
                return TxnListing((), unknown, ErrorCode.coordinator_load_in_progress)
            found.extend(part.ops.list(states, producer_ids, duration_ms).states)
        return TxnListing(tuple(found), unknown)

    # ------------------------------------------------------------ driving steps
    async def _drive(self, part: TxnPartition, step: TxnStep, wait_markers_s: float = 0.0) -> TxnAnswer:
        """Write the step's record (if any), then settle it; start its markers once it is durable (and wait up
        to `wait_markers_s` for them and the completion record)."""
        if not step.needs_write:
            answer = step.answer
            assert answer is not None
            return answer
        error = await self._append(part, step)
        answer = step.written(error)
        if step.markers is not None:
            task = self._start_markers(part, step.markers)
            if wait_markers_s > 0:
                await asyncio.wait({task}, timeout=wait_markers_s)
        return answer

    async def _append(self, part: TxnPartition, step: TxnStep) -> ErrorCode | None:
        try:
            await self.state_log.append(part.partition, step.txn_id, None if step.tombstone else step.record)
        except Exception as exc:  # the transition is dropped; step.written maps the append's error as Kafka
            (log.debug if logged_by_storage(exc) else log.warning)(
                "transaction state write failed", partition=part.partition, transactional_id=step.txn_id,
                error=repr(exc))
            return error_code_for(exc)
        if self.partitions.get(part.partition) is not part:
            return ErrorCode.not_leader_or_follower  # the partition moved meanwhile: NOT_COORDINATOR
        return None

    def _start_markers(self, part: TxnPartition, job: MarkerJob) -> asyncio.Task[None]:
        task = asyncio.ensure_future(self._markers_then_complete(part, job))
        part.tasks.add(task)
        task.add_done_callback(part.tasks.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or
                               log.error("transaction markers failed", transactional_id=job.txn_id,
                                         exc_info=t.exception()))
        return task

    async def _markers_then_complete(self, part: TxnPartition, job: MarkerJob) -> None:
        assert self.markers is not None, "the app sets the marker writer before serving"
        done = await send_markers(self.markers, job.partitions, job.producer_id, job.producer_epoch,
                                  job.commit, job.coordinator_epoch,
                                  still_ours=lambda: self.partitions.get(part.partition) is part)
        if not done:
            return  # the partition moved: its next coordinator sends the markers again after its load
        step = job.complete()
        while step is not None and step.needs_write:
            error = await self._append(part, step)
            answer = step.written(error)
            if not step.retry:
                if answer.error is not ErrorCode.none:
                    log.warning("completing a transaction failed", transactional_id=job.txn_id,
                                error=answer.error.name)
                elif self.listener is not None and (md := part.txns.get(job.txn_id)) is not None:
                    self.listener.transaction_ended(md, part.coordinator_epoch)
                return
            await asyncio.sleep(RETRY_BACKOFF_MS / 1000)
            if self.partitions.get(part.partition) is not part:
                return

    # ------------------------------------------------------------------ timers
    async def _every(self, interval_ms: int, action: Callable[[], Awaitable[object]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await action()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("transaction coordinator task failed", task=getattr(action, "__name__", "?"))

    async def abort_timed_out(self) -> int:
        """Kafka's abortTimedOutTransactions: returns how many aborts were started."""
        started = 0
        now = self.wall_ms()
        for part in list(self.partitions.values()):
            if part.state is Loading.ACTIVE:
                for step in part.ops.timed_out(now):
                    started += 1
                    answer = await self._drive(part, step)
                    if answer.error is not ErrorCode.none:
                        log.warning("aborting a timed-out transaction failed", transactional_id=step.txn_id,
                                    error=answer.error.name)
        return started

    async def _sweep_orphans(self) -> int:
        return 0 if self.listener is None else self.listener.sweep()

    async def _compact(self) -> int:
        return await self.state_log.compact(self.wall_ms())

    async def expire_ids(self) -> int:
        expired = 0
        now = self.wall_ms()
        for part in list(self.partitions.values()):
            if part.state is Loading.ACTIVE:
                for step in part.ops.expired(now):
                    expired += (await self._drive(part, step)).error is ErrorCode.none
        return expired
