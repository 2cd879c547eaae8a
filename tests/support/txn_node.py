"""One node's transaction coordinator and group coordinator wired together, in process: a real
__transaction_state log in a tmp dir (flush policy none), the group coordinator's shards over a MemoryLog
(fake clock), markers for the offsets partitions written by the group coordinator as in the server
(transactions/runtime/wiring.py),
topic partitions' markers recorded; and the orphaned-offsets sweeper as its listener."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.completion import settled
from coordinator.data_plane.producer_ids import ProducerIdAllocator
from coordinator.groups.settings import GroupSettings
from coordinator.handlers.txn_offset_commit import TxnOffsetCommitHandler
from coordinator.offsets.manager import fetch
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog
from coordinator.transactions.runtime.markers import MarkerWriter
from coordinator.transactions.runtime.orphans import OrphanedOffsets
from coordinator.transactions.runtime.settings import TxnRuntimeSettings
from coordinator.transactions.runtime.state_log import TxnStateLog
from coordinator.transactions.runtime.txn_coordinator import Loading, TransactionCoordinator
from rules.placement import OFFSETS_TOPIC, partition_for
from tests.support.offsets import schema

OFFSETS_PARTITIONS = 3


def OFFSETS(group: str) -> tuple[str, int]:  # reads as the partition AddOffsetsToTxn adds
    return OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def stable_fetch(groups: GroupCoordinator, group: str, partitions=(0,), topic: str = "t") -> list:
    """(partition, offset, error) of an OffsetFetch with require_stable."""
    topics = [SimpleNamespace(name=topic, partition_indexes=list(partitions))]
    return [(i, o, code) for _t, rows in fetch(groups.shard_for(group), group, topics, True)
            for i, o, _e, _m, code in rows]


class TxnNode:
    def __init__(self, tmp_path: Any, txn_partitions: int = 1, hosted: list[int] | None = None) -> None:
        self.tmp = tmp_path
        self.txn_partitions = txn_partitions
        self.hosted = hosted
        self.log = MemoryLog(auto=True)
        self.groups = GroupCoordinator(GroupSettings(offsets_partitions=OFFSETS_PARTITIONS), FakeScheduler(),
                                       self.log)
        self.data_markers: list[tuple] = []
        self.clock = Clock()
        settings = TxnRuntimeSettings(num_partitions=txn_partitions, abort_interval_ms=3_600_000,
                                      expire_interval_ms=3_600_000)
        self.txn = TransactionCoordinator(settings, TxnStateLog(str(tmp_path / "txn-logs"), flush_policy="none"),
                                          MarkerWriter(self._data_marker, self.groups.complete_transaction),
                                          ProducerIdAllocator(str(tmp_path)), wall_ms=self.clock)
        self.orphans = OrphanedOffsets(self.txn, self.groups)
        self.txn.listener = self.orphans

    async def _data_marker(self, *marker) -> None:
        self.data_markers.append(marker)

    async def __aenter__(self) -> TxnNode:
        await self.txn.start(self.hosted)
        for _ in range(2000):
            if all(part.state is Loading.ACTIVE for part in self.txn.partitions.values()):
                break
            await asyncio.sleep(0.001)
        await asyncio.sleep(0)  # the sweep the loads asked for
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.txn.stop()

    def txn_offset_handler(self) -> TxnOffsetCommitHandler:
        return TxnOffsetCommitHandler(self.groups, {"t": 2}, None, self.txn)

    async def begin(self, txn_id: str, partitions: list[tuple[str, int]]) -> tuple[int, int]:
        """InitProducerId, then AddPartitionsToTxn (AddOffsetsToTxn: the group's offsets partition) of `partitions`."""
        answer = await self.txn.init_producer_id(txn_id, 60_000)
        assert answer.error is ErrorCode.none, answer
        assert await self.txn.add_partitions(txn_id, answer.producer_id, answer.producer_epoch,
                                             partitions) is ErrorCode.none
        return answer.producer_id, answer.producer_epoch

    def pending(self, group: str) -> bool:
        return self.groups.shard_for(group).offsets.txn.has_open(group)


def request(version: int, txn_id: str, producer_id: int, epoch: int, offset: int = 4, group: str = "g"):
    """A TxnOffsetCommit of `offset` for partition 0 of topic t."""
    m = schema("txn_offset_commit", version)
    fields: dict = {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
    if version >= 2:
        fields["committed_leader_epoch"] = -1
    extra = {"generation_id": -1, "member_id": "", "group_instance_id": None} if version >= 3 else {}
    return m.TxnOffsetCommitRequest(transactional_id=txn_id, group_id=group, producer_id=producer_id,
                                    producer_epoch=epoch, topics=(m.TxnOffsetCommitRequestTopic(
                                        name="t", partitions=(m.TxnOffsetCommitRequestPartition(**fields),)),),
                                    **extra)


async def commit(handler: TxnOffsetCommitHandler, version: int, *args, **kwargs) -> ErrorCode:
    """The error of `request(version, *args, **kwargs)`'s one partition, once answered."""
    result = await settled(handler.handle(SimpleNamespace(api_version=version), request(version, *args, **kwargs)))
    [topic] = result.topics
    [partition] = topic.partitions
    return partition.error_code
