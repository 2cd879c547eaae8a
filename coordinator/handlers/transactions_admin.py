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
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from coordinator.transactions.descriptions import TxnDescription
from coordinator.transactions.runtime.txn_coordinator import TransactionCoordinator
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import DescribeTransactionsRequest, ListTransactionsRequest

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

    def describe(self, ctx: RequestContext, request: DescribeTransactionsRequest) -> object:
        states = [self._describe_one(ctx, txn_id) for txn_id in request.transactional_ids]
        return build(API_TABLE[ApiKey.DESCRIBE_TRANSACTIONS].responses[ctx.api_version], throttle_time=NO_THROTTLE,
                     transaction_states=states)

    def _describe_one(self, ctx: RequestContext, txn_id: str) -> Fields:
        found = self.txn.describe(txn_id) if self._may_describe(ctx, txn_id) else \
            TxnDescription(txn_id, ErrorCode.transactional_id_authorization_failed)
        access = self.access
        return {"error_code": found.error, "transactional_id": txn_id, "transaction_state": found.state,
                "transaction_timeout": datetime.timedelta(milliseconds=found.transaction_timeout_ms),
                "transaction_start_time": _wire_time(found.transaction_start_time_ms if found.error is ErrorCode.none
                                                     else 0),  # the schema's default on an error entry
                "producer_id": found.producer_id, "producer_epoch": found.producer_epoch,
                "topics": [{"topic": topic, "partitions": list(parts)} for topic, parts in found.topics
                           if not access.enabled or access.topic(ctx, Op.DESCRIBE, topic)]}

    def list(self, ctx: RequestContext, request: ListTransactionsRequest) -> object:
        listing = self.txn.list_transactions(request.state_filters, request.producer_id_filters,
                                             int(getattr(request, "duration_filter", -1)))
        states = [{"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                   "transaction_state": t.state} for t in listing.states if self._may_describe(ctx, t.transactional_id)]
        return build(API_TABLE[ApiKey.LIST_TRANSACTIONS].responses[ctx.api_version], throttle_time=NO_THROTTLE,
                     error_code=listing.error, unknown_state_filters=list(listing.unknown_state_filters),
                     transaction_states=states)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = TransactionsAdminHandler(services.txn, services.access)
    dispatcher.register(ApiKey.DESCRIBE_TRANSACTIONS, handler.describe)
    dispatcher.register(ApiKey.LIST_TRANSACTIONS, handler.list)
