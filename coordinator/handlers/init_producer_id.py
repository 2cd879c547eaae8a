"""InitProducerId v0-v5 for idempotent producers (kio has v0+; v6 is not advertised).

Without a transactional id Kafka's TransactionCoordinator "blindly" hands out a new
producer id with epoch 0, whatever producer id/epoch a v3+ request carries; we do
the same from a persisted id block (data_plane/producer_ids.py; when a new block cannot be
reserved from PostgreSQL now: COORDINATOR_LOAD_IN_PROGRESS, as Kafka). This server has no
transaction coordinator: a transactional id gets COORDINATOR_NOT_AVAILABLE (what
Kafka answers while its transaction state topic is unavailable), an empty one
INVALID_REQUEST (as Kafka).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.errors import KafkaError, error_code_for
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build


class InitProducerIdHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def handle(self, ctx: RequestContext, request) -> object:
        cls = API_TABLE[ApiKey.INIT_PRODUCER_ID].responses[ctx.api_version]

        def answer(code: ErrorCode, producer_id: int = -1, producer_epoch: int = -1) -> object:
            return build(cls, throttle_time=NO_THROTTLE, error_code=code, producer_id=producer_id,
                         producer_epoch=producer_epoch)

        txn = request.transactional_id
        if txn is not None:
            return answer(ErrorCode.invalid_request if txn == "" else ErrorCode.coordinator_not_available)
        access = self.access  # KafkaApis: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
        if access.enabled and not access.cluster(ctx, Op.IDEMPOTENT_WRITE) and \
                not access.any(ctx, Op.WRITE, ResourceType.TOPIC):
            return answer(ErrorCode.cluster_authorization_failed)
        ids = self.data.producer_ids
        producer_id = ids.take()
        if producer_id is not None:
            return answer(ErrorCode.none, producer_id, 0)

        async def after_reservation() -> object:  # cluster mode: a new block from PostgreSQL
            try:
                return answer(ErrorCode.none, await ids.allocate(), 0)
            except KafkaError as exc:
                return answer(error_code_for(exc))

        return after_reservation()


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.INIT_PRODUCER_ID, InitProducerIdHandler(services.data, services.access).handle)
