"""AddOffsetsToTxn v0-v4: adds the group's `__consumer_offsets` partition to the transaction.

KafkaApis.handleAddOffsetsToTxnRequest: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
READ on the group (GROUP_AUTHORIZATION_FAILED), then the coordinator adds partitionFor(group) of the offsets
topic; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
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
from rules.placement import OFFSETS_TOPIC, partition_for

if TYPE_CHECKING:
    from protocol.request_types import AddOffsetsToTxnRequest


class AddOffsetsToTxnHandler:
    def __init__(self, txn: TransactionCoordinator, offsets_partitions: int, access: Access) -> None:
        self.txn = txn
        self.offsets_partitions = offsets_partitions
        self.access = access

    def handle(self, ctx: RequestContext, request: AddOffsetsToTxnRequest) -> object:
        version = ctx.api_version

        def answer(code: ErrorCode) -> Any:
            return build(API_TABLE[ApiKey.ADD_OFFSETS_TO_TXN].responses[version], throttle_time=NO_THROTTLE,
                         error_code=client_error(code, "AddOffsetsToTxn", version))

        access = self.access
        if access.enabled:
            if not access.allows(ctx, Op.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
                return answer(ErrorCode.transactional_id_authorization_failed)
            if not access.group(ctx, Op.READ, request.group_id):
                return answer(ErrorCode.group_authorization_failed)
        partition = (OFFSETS_TOPIC, partition_for(request.group_id, self.offsets_partitions))

        async def added() -> Any:
            return answer(await self.txn.add_partitions(request.transactional_id, request.producer_id,
                                                        request.producer_epoch, [partition]))

        return added()


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = AddOffsetsToTxnHandler(services.txn, services.groups.settings.offsets_partitions, services.access)
    dispatcher.register(ApiKey.ADD_OFFSETS_TO_TXN, handler.handle)
