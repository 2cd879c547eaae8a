"""InitProducerId v0-v5 (kio has v0+; v6, KIP-939's two-phase commit, is not advertised).

Without a transactional id Kafka's TransactionCoordinator "blindly" hands out a new
producer id with epoch 0, whatever producer id/epoch a v3+ request carries; we do
the same from a persisted id block (data_plane/producer_ids.py; when a new block cannot be
reserved from PostgreSQL now: COORDINATOR_LOAD_IN_PROGRESS, as Kafka). With a transactional id
(WRITE on it, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) the transaction coordinator decides
(coordinator/transactions/): a new id or an epoch bump, fencing the old producer; a producer id without an
epoch or the reverse is INVALID_REQUEST (KafkaApis); PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.errors import KafkaError, error_code_for
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
    from protocol.request_types import InitProducerIdRequest

MILLISECOND = timedelta(milliseconds=1)


class InitProducerIdHandler:
    def __init__(self, data: DataPlane, access: Access | None = None,
                 txn: TransactionCoordinator | None = None) -> None:
        self.data = data
        self.access = access or Access()
        self.txn = txn

    def handle(self, ctx: RequestContext, request: InitProducerIdRequest) -> object:
        cls = API_TABLE[ApiKey.INIT_PRODUCER_ID].responses[ctx.api_version]

        def answer(code: ErrorCode, producer_id: int = -1, producer_epoch: int = -1) -> object:
            return build(cls, throttle_time=NO_THROTTLE, error_code=code, producer_id=producer_id,
                         producer_epoch=producer_epoch)

        txn_id = request.transactional_id
        if txn_id is not None:
            return self.transactional(ctx, request, txn_id, answer)
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

    def transactional(self, ctx: RequestContext, request: InitProducerIdRequest, txn_id: str,
                      answer: Callable[..., object]) -> object:
        if self.access.enabled and not self.access.allows(ctx, Op.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
            return answer(ErrorCode.transactional_id_authorization_failed)
        producer_id = getattr(request, "producer_id", -1)
        producer_epoch = getattr(request, "producer_epoch", -1)
        if (producer_id == -1) != (producer_epoch == -1):
            return answer(ErrorCode.invalid_request)
        if self.txn is None:
            return answer(ErrorCode.coordinator_not_available)
        txn, timeout_ms = self.txn, request.transaction_timeout // MILLISECOND
        version = ctx.api_version

        async def initialised() -> object:
            found = await txn.init_producer_id(txn_id, timeout_ms, producer_id, producer_epoch)
            return answer(client_error(found.error, "InitProducerId", version), found.producer_id,
                          found.producer_epoch)

        return initialised()


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.INIT_PRODUCER_ID,
                        InitProducerIdHandler(services.data, services.access, services.txn).handle)
