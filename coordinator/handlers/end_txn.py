"""EndTxn v0-v4 (transaction version 1: v5 and its per-transaction epoch bump are not offered).

KafkaApis.handleEndTxnRequest: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then
the coordinator's answer, which comes once the PrepareCommit/PrepareAbort record is durable (the markers
are written after it); PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from coordinator.transactions.runtime.txn_coordinator import TransactionCoordinator
from coordinator.transactions.steps import client_error
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

if TYPE_CHECKING:
    from protocol.request_types import EndTxnRequest


class EndTxnHandler:
    def __init__(self, txn: TransactionCoordinator, access: Access) -> None:
        self.txn = txn
        self.access = access

    def handle(self, ctx: RequestContext, request: EndTxnRequest) -> object:
        version = ctx.api_version

        def answer(code: ErrorCode) -> Any:
            return build(API_TABLE[ApiKey.END_TXN].responses[version], throttle_time=NO_THROTTLE,
                         error_code=client_error(code, "EndTxn", version))

        if self.access.enabled and not self.access.allows(ctx, Op.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                          request.transactional_id):
            return answer(ErrorCode.transactional_id_authorization_failed)

        async def ended() -> Any:
            return answer(await self.txn.end_txn(request.transactional_id, request.producer_id,
                                                 request.producer_epoch, bool(request.committed)))

        return ended()


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.END_TXN, EndTxnHandler(services.txn, services.access).handle)
