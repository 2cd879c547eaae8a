"""InitProducerId v0-v5 for idempotent producers (kio has v0+; v6 is not advertised).

Without a transactional id Kafka's TransactionCoordinator "blindly" hands out a new
producer id with epoch 0, whatever producer id/epoch a v3+ request carries; we do
the same from a persisted id block (data_plane/producer_ids.py). This server has no
transaction coordinator: a transactional id gets COORDINATOR_NOT_AVAILABLE (what
Kafka answers while its transaction state topic is unavailable), an empty one
INVALID_REQUEST (as Kafka).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build


class InitProducerIdHandler:
    def __init__(self, data: DataPlane) -> None:
        self.data = data

    def handle(self, ctx: RequestContext, request) -> object:
        cls = API_TABLE[ApiKey.INIT_PRODUCER_ID].responses[ctx.api_version]
        txn = request.transactional_id
        if txn is not None:
            code = ErrorCode.invalid_request if txn == "" else ErrorCode.coordinator_not_available
            return build(cls, throttle_time=NO_THROTTLE, error_code=code, producer_id=-1, producer_epoch=-1)
        producer_id = self.data.producer_ids.allocate()
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, producer_id=producer_id,
                     producer_epoch=0)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.INIT_PRODUCER_ID, InitProducerIdHandler(services.data).handle)
