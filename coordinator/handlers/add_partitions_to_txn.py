"""AddPartitionsToTxn v0-v3 (the clients' versions; v4+ is the brokers' batched verification).

KafkaApis.handleAddPartitionsToTxnRequest: WRITE on the transactional id, else every partition
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then per partition TOPIC_AUTHORIZATION_FAILED (no WRITE on its topic)
or UNKNOWN_TOPIC_OR_PARTITION (no such partition), and if any partition failed so, the others get
OPERATION_NOT_ATTEMPTED and the coordinator is not asked. Otherwise the coordinator's one answer is every
partition's error (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from coordinator.transactions.runtime.txn_coordinator import TransactionCoordinator
from coordinator.transactions.steps import client_error
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import AddPartitionsToTxnRequest

E = ErrorCode


def _response(version: int, results: dict[tuple[str, int], ErrorCode]) -> Any:
    by_topic: dict[str, list[Fields]] = {}
    for (topic, partition), code in results.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": code})
    return build(API_TABLE[ApiKey.ADD_PARTITIONS_TO_TXN].responses[version], throttle_time=NO_THROTTLE,
                 results_by_topic_v3_and_below=[{"name": name, "results_by_partition": parts}
                                                for name, parts in by_topic.items()])


class AddPartitionsToTxnHandler:
    def __init__(self, txn: TransactionCoordinator, topics: TopicCatalog, access: Access) -> None:
        self.txn = txn
        self.topics = topics
        self.access = access

    def handle(self, ctx: RequestContext, request: AddPartitionsToTxnRequest) -> object:
        version = ctx.api_version
        txn_id = request.v3_and_below_transactional_id
        wanted: list[tuple[str, int]] = [(t.name, int(p)) for t in request.v3_and_below_topics for p in t.partitions]
        access = self.access
        if access.enabled and not access.allows(ctx, Op.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
            return _response(version, {tp: E.transactional_id_authorization_failed for tp in wanted})
        refused: dict[tuple[str, int], ErrorCode] = {}
        writable: dict[str, bool] = {}
        for topic, partition in wanted:
            if access.enabled:
                if topic not in writable:
                    writable[topic] = access.topic(ctx, Op.WRITE, topic)
                if not writable[topic]:
                    refused[(topic, partition)] = E.topic_authorization_failed
                    continue
            info = self.topics.get(topic)
            if info is None or not 0 <= partition < info.partitions:
                refused[(topic, partition)] = E.unknown_topic_or_partition
        if refused:
            return _response(version, {tp: refused.get(tp, E.operation_not_attempted) for tp in wanted})

        async def added() -> Any:
            code = await self.txn.add_partitions(txn_id, request.v3_and_below_producer_id,
                                                 request.v3_and_below_producer_epoch, wanted)
            return _response(version, {tp: client_error(code, "AddPartitionsToTxn", version) for tp in wanted})

        return added()


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.ADD_PARTITIONS_TO_TXN,
                        AddPartitionsToTxnHandler(services.txn, services.topics, services.access).handle)
