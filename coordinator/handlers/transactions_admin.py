"""DescribeTransactions v0 and ListTransactions v0-v1 (the Admin client's describeTransactions /
listTransactions, kafka-transactions.sh).

KafkaApis: DescribeTransactions answers each id TRANSACTIONAL_ID_AUTHORIZATION_FAILED without DESCRIBE on
it, else the coordinator's view (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND),
listing only the topics the principal may DESCRIBE. ListTransactions lists the transactions this node
coordinates, filtered by state names (unknown ones are echoed back in `unknown_state_filters`), producer ids
and (v1) how long they have run, and leaves out ids the principal may not DESCRIBE; while a partition loads,
COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from coordinator.transactions.state import STATE_NAMES
from coordinator.txn.coordinator import TransactionCoordinator
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

_UTC = datetime.UTC
_MS = datetime.timedelta(milliseconds=1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)


def _wire_time(ms: int) -> datetime.datetime:
    return _EPOCH + ms * _MS  # -1 (no transaction) is written as -1, as Kafka


class TransactionsAdminHandler:
    def __init__(self, txn: TransactionCoordinator, access: Access) -> None:
        self.txn = txn
        self.access = access

    def _may_describe(self, ctx: RequestContext, txn_id: str) -> bool:
        return not self.access.enabled or self.access.allows(ctx, Op.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                                             txn_id)

    def describe(self, ctx: RequestContext, request: Any) -> Any:
        states = [self._describe_one(ctx, txn_id) for txn_id in request.transactional_ids]
        return build(API_TABLE[ApiKey.DESCRIBE_TRANSACTIONS].responses[ctx.api_version], throttle_time=NO_THROTTLE,
                     transaction_states=states)

    def _describe_one(self, ctx: RequestContext, txn_id: str) -> dict:
        empty = {"transactional_id": txn_id, "transaction_state": "", "transaction_timeout": datetime.timedelta(0),
                 "transaction_start_time": _wire_time(-1), "producer_id": -1, "producer_epoch": -1, "topics": []}
        if not self._may_describe(ctx, txn_id):
            return {**empty, "error_code": ErrorCode.transactional_id_authorization_failed}
        code, found = self.txn.describe(txn_id)
        if code is not ErrorCode.none or found is None:
            return {**empty, "error_code": code}
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(found.partitions):
            by_topic.setdefault(topic, []).append(partition)
        access = self.access
        topics = [{"topic": topic, "partitions": parts} for topic, parts in by_topic.items()
                  if not access.enabled or access.topic(ctx, Op.DESCRIBE, topic)]
        return {"error_code": ErrorCode.none, "transactional_id": txn_id,
                "transaction_state": STATE_NAMES[found.state],
                "transaction_timeout": datetime.timedelta(milliseconds=found.txn_timeout_ms),
                "transaction_start_time": _wire_time(found.txn_start_ms), "producer_id": found.producer_id,
                "producer_epoch": found.producer_epoch, "topics": topics}

    def list(self, ctx: RequestContext, request: Any) -> Any:
        known = {name.lower(): name for name in STATE_NAMES.values()}
        wanted = set(request.state_filters)
        unknown = [name for name in request.state_filters if name not in known.values()]
        duration = int(getattr(request, "duration_filter", -1))
        code, found = self.txn.list_transactions(wanted - set(unknown), set(request.producer_id_filters), duration)
        if wanted and len(unknown) == len(wanted):
            found = []  # only unknown states asked for: nothing matches (Kafka)
        states = [{"transactional_id": txn_id, "producer_id": producer_id, "transaction_state": STATE_NAMES[state]}
                  for txn_id, producer_id, state in found if self._may_describe(ctx, txn_id)]
        return build(API_TABLE[ApiKey.LIST_TRANSACTIONS].responses[ctx.api_version], throttle_time=NO_THROTTLE,
                     error_code=code, unknown_state_filters=unknown, transaction_states=states)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = TransactionsAdminHandler(services.txn, services.access)
    dispatcher.register(ApiKey.DESCRIBE_TRANSACTIONS, handler.describe)
    dispatcher.register(ApiKey.LIST_TRANSACTIONS, handler.list)
