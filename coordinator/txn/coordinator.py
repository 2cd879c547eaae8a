"""The transaction coordinator of this node: the `__transaction_state` partitions it hosts and the
transactional APIs' requests, driven through the pure decisions of coordinator/transactions/.

Each request finds its partition (transaction_partition_for); a partition that is not hosted here answers
NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS (both retriable: clients look the
coordinator up again). A decision (`TxnStep`) that writes a record is answered once the record is durable;
the record is then replayed (records are the truth, the same replay loading uses). EndTxn's PrepareCommit/
PrepareAbort starts the markers (txn/markers.py) in the background; when they are all written the
CompleteCommit/CompleteAbort record is written. Every `abort_interval_ms` transactions past their timeout
are aborted (with an epoch bump, as Kafka), every `expire_interval_ms` idle transactional ids expire.
After a partition loads, transactions found in PrepareCommit/PrepareAbort have their markers sent again
(Kafka's recovery after a coordinator failover or a crash).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.data_plane.producer_ids import ProducerIdAllocator
from coordinator.errors import error_code_for
from coordinator.transactions.operations import TxnOps, TxnSettings
from coordinator.txn.markers import MarkerWriter, send_markers
from coordinator.txn.settings import TxnRuntimeSettings
from coordinator.txn.state_log import TxnStateLog
from storage.placement import transaction_partition_for

log = structlog.get_logger(__name__)


def _wall_ms() -> int:
    return int(time.time() * 1000)


class Loading(Enum):
    LOADING = "loading"
    ACTIVE = "active"


class TxnPartition:
    """One hosted `__transaction_state` partition: its transactions and the decisions over them."""

    __slots__ = ("partition", "coordinator_epoch", "state", "txns", "ops", "tasks")

    def __init__(self, partition: int, coordinator_epoch: int, ops: TxnOps, txns: dict) -> None:
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch
        self.state = Loading.LOADING
        self.txns = txns
        self.ops = ops
        self.tasks: set[asyncio.Task] = set()  # markers in flight, cancelled when the partition goes


class TransactionCoordinator:
    def __init__(self, settings: TxnRuntimeSettings, state_log: TxnStateLog, markers: MarkerWriter | None,
                 producer_ids: ProducerIdAllocator, wall_ms: Callable[[], int] = _wall_ms) -> None:
        self.settings = settings
        self.state_log = state_log
        self.markers = markers  # set by the app once the data plane and the group coordinator exist
        self.producer_ids = producer_ids
        self.wall_ms = wall_ms
        self.partitions: dict[int, TxnPartition] = {}
        self._periodic: list[asyncio.Task] = []

    # ------------------------------------------------------------------ lifecycle
    async def start(self, owned: Iterable[int] | None = None) -> None:
        """Local mode: host every partition (`owned` None), then run the timers; cluster mode calls
        `start_timers` alone and takes its partitions one by one (`take`)."""
        partitions = range(self.settings.num_partitions) if owned is None else owned
        for partition in partitions:
            self.state_log.open(partition)
            self._load_in_background(partition, 0)
        self.start_timers()

    def start_timers(self) -> None:
        """The periodic aborts of timed-out transactions and expiries of idle ids, over the hosted partitions."""
        if self._periodic:
            return
        self._periodic = [
            asyncio.ensure_future(self._every(self.settings.abort_interval_ms, self.abort_timed_out)),
            asyncio.ensure_future(self._every(self.settings.expire_interval_ms, self.expire_ids)),
        ]

    async def take(self, partition: int, coordinator_epoch: int, log_: Any = None) -> None:
        """Cluster mode: host `partition` (its log given) at the ownership epoch, load it, then serve."""
        if log_ is not None:
            self.state_log.adopt(partition, log_)
        else:
            self.state_log.open(partition)
        await self._load(partition, coordinator_epoch)

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
            for task in list(part.tasks):
                task.cancel()

    def _load_in_background(self, partition: int, coordinator_epoch: int) -> None:
        task = asyncio.ensure_future(self._load(partition, coordinator_epoch))
        task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or
                               log.error("transaction state partition failed to load", partition=partition,
                                         exc_info=t.exception()))

    async def _load(self, partition: int, coordinator_epoch: int) -> None:
        started = time.monotonic()
        txns: dict = {}
        ops = TxnOps(txns, self.wall_ms, TxnSettings(max_timeout_ms=self.settings.max_timeout_ms,
                                                     id_expiration_ms=self.settings.id_expiration_ms),
                     coordinator_epoch)
        part = TxnPartition(partition, coordinator_epoch, ops, txns)
        self.partitions[partition] = part
        latest = await self.state_log.load(partition)
        if self.partitions.get(partition) is not part:
            return  # given up while loading
        for txn_id, value in latest.items():
            ops.replay(txn_id, value)
        part.state = Loading.ACTIVE
        log.info("transaction state partition loaded", partition=partition, transactions=len(txns),
                 coordinator_epoch=coordinator_epoch, seconds=round(time.monotonic() - started, 3))
        for job in ops.recovering():
            self._start_markers(part, job)

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
                               producer_epoch: int = -1) -> tuple[ErrorCode, int, int]:
        if txn_id == "":
            return ErrorCode.invalid_request, -1, -1
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return part, -1, -1
        try:
            await self.producer_ids.ensure_available()
        except Exception as exc:
            return error_code_for(exc), -1, -1
        part = self._active(txn_id)  # the partition may have moved while the block was reserved
        if isinstance(part, ErrorCode):
            return part, -1, -1
        step = part.ops.init_producer_id(txn_id, timeout_ms, producer_id, producer_epoch,
                                         self._take_producer_id)
        answer = await self._drive(part, step)
        if isinstance(answer, ErrorCode):
            return answer, -1, -1
        return ErrorCode.none, answer[0], answer[1]

    def _take_producer_id(self) -> int:
        producer_id = self.producer_ids.take()
        assert producer_id is not None, "ensure_available() reserved one"
        return producer_id

    async def add_partitions(self, txn_id: str, producer_id: int, producer_epoch: int,
                             partitions: list[tuple[str, int]]) -> ErrorCode:
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return part
        answer = await self._drive(part, part.ops.add_partitions(txn_id, producer_id, producer_epoch, partitions))
        return answer if isinstance(answer, ErrorCode) else ErrorCode.none

    def verify(self, txn_id: str, producer_id: int, producer_epoch: int, topic: str,
               partition: int) -> ErrorCode | None:
        """KIP-890: a transactional batch may begin a transaction in a partition only once the partition
        was added to it. Only transactions coordinated here are checked (None: no objection)."""
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return None if part is ErrorCode.not_coordinator else part
        step = part.ops.add_partitions(txn_id, producer_id, producer_epoch, [(topic, partition)], verify_only=True)
        return step.error

    async def end_txn(self, txn_id: str, producer_id: int, producer_epoch: int, commit: bool) -> ErrorCode:
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return part
        answer = await self._drive(part, part.ops.end_txn(txn_id, producer_id, producer_epoch, commit))
        return answer if isinstance(answer, ErrorCode) else ErrorCode.none

    def describe(self, txn_id: str) -> tuple[ErrorCode, Any]:
        part = self._active(txn_id)
        if isinstance(part, ErrorCode):
            return part, None
        return part.ops.describe(txn_id)

    def list_transactions(self, states: set[str], producer_ids: set[int], duration_ms: int
                          ) -> tuple[ErrorCode, list]:
        found: list = []
        code = ErrorCode.none
        for part in self.partitions.values():
            if part.state is not Loading.ACTIVE:
                code = ErrorCode.coordinator_load_in_progress
                continue
            found.extend(part.ops.list(states, producer_ids, duration_ms))
        return code, found

    # ------------------------------------------------------------ driving steps
    async def _drive(self, part: TxnPartition, step: Any) -> Any:
        """Write the step's record (if any), then settle it: its answer, or an ErrorCode."""
        if step.error is not None and step.error is not ErrorCode.none:
            return step.error
        error: BaseException | None = None
        if step.record is not None or getattr(step, "tombstone", False):
            try:
                await self.state_log.append(part.partition, step.txn_id, step.record)
            except Exception as exc:  # the transition is reset; Kafka maps the append's error
                error = exc
            if self.partitions.get(part.partition) is not part:
                error = error or ConnectionResetError("the partition moved")
        answer = step.written(error)
        if error is None and step.markers is not None:
            self._start_markers(part, step.markers)
        return answer

    def _start_markers(self, part: TxnPartition, job: Any) -> None:
        task = asyncio.ensure_future(self._markers_then_complete(part, job))
        part.tasks.add(task)
        task.add_done_callback(part.tasks.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or
                               log.error("transaction markers failed", transactional_id=job.txn_id,
                                         exc_info=t.exception()))

    async def _markers_then_complete(self, part: TxnPartition, job: Any) -> None:
        assert self.markers is not None, "the app sets the marker writer before serving"
        done = await send_markers(self.markers, job.partitions, job.producer_id, job.producer_epoch,
                                  job.commit, job.coordinator_epoch,
                                  still_ours=lambda: self.partitions.get(part.partition) is part)
        if not done:
            return
        answer = await self._drive(part, part.ops.complete(job))
        if isinstance(answer, ErrorCode) and answer is not ErrorCode.none:
            log.warning("completing a transaction failed", transactional_id=job.txn_id, error=answer.name)

    # ------------------------------------------------------------------ timers
    async def _every(self, interval_ms: int, action: Callable[[], Any]) -> None:
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
                    await self._drive(part, step)
        return started

    async def expire_ids(self) -> int:
        expired = 0
        now = self.wall_ms()
        for part in list(self.partitions.values()):
            if part.state is Loading.ACTIVE:
                for step in part.ops.expired(now):
                    answer = await self._drive(part, step)
                    expired += not isinstance(answer, ErrorCode)
        return expired
