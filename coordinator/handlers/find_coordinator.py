"""FindCoordinator v0-v6: a group is coordinated by the leader of its offsets partition.

The cluster view names the leader of the __consumer_offsets partition partition_for
places the group on (in local mode this node leads them all); a partition with no
leader answers COORDINATOR_NOT_AVAILABLE, which clients retry. A transactional id (key type 1)
is coordinated by the leader of its __transaction_state partition (transaction_partition_for; in cluster
mode the first such lookup creates the topic, COORDINATOR_NOT_AVAILABLE until it exists and is owned);
a share key (key type 2, v6 only, "group:topicId:partition", what brokers look up: CLUSTER_ACTION on the cluster,
else CLUSTER_AUTHORIZATION_FAILED) is coordinated by the leader of its __share_group_state partition
(share_state_partition_for); a key that does not parse, an older version, or an unknown key type is INVALID_REQUEST.
An empty group id gets INVALID_GROUP_ID. v4+ batches keys, each with its own error; before v4 an error
answers with Kafka's "no node" (-1, "", -1) and the error's default message.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.cluster.view import Broker, ClusterView
from coordinator.errors import error_message
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build
from rules.placement import (
    DEFAULT_SHARE_STATE_PARTITIONS,
    DEFAULT_TXN_PARTITIONS,
    OFFSETS_TOPIC,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    partition_for,
    share_state_partition_for,
    transaction_partition_for,
)

if TYPE_CHECKING:
    from protocol.request_types import (
        FindCoordinatorRequest,
        FindCoordinatorV0,
        FindCoordinatorV1,
        FindCoordinatorV2,
        FindCoordinatorV3,
    )

GROUP, TRANSACTION, SHARE = 0, 1, 2
BATCHED_FROM = 4
SHARE_FROM = 6


NO_NODE = {"node_id": -1, "host": "", "port": -1}


def share_key_valid(key: str) -> bool:
    """Kafka's SharePartitionKey.validate: "groupId:topicId:partition", a topic id of 16 bytes, an int partition."""
    tokens = key.split(":")
    if len(tokens) != 3 or not tokens[0].strip():
        return False
    try:
        raw = base64.urlsafe_b64decode(tokens[1] + "==")
        int(tokens[2])
    except ValueError:
        return False
    return len(raw) == 16 and -2**31 <= int(tokens[2]) < 2**31


def error_for(key_type: int, key: str, version: int = SHARE_FROM) -> ErrorCode:
    if key_type == GROUP:
        return ErrorCode.invalid_group_id if not key else ErrorCode.none
    if key_type == TRANSACTION:
        return ErrorCode.none
    if key_type == SHARE and version >= SHARE_FROM and share_key_valid(key):
        return ErrorCode.none
    return ErrorCode.invalid_request


class FindCoordinatorHandler:
    def __init__(self, view: ClusterView, offsets_partitions: int, access: Access | None = None,
                 txn_partitions: int = DEFAULT_TXN_PARTITIONS, txn_topic: Callable[[], bool] | None = None,
                 share_partitions: Callable[[], int] = lambda: DEFAULT_SHARE_STATE_PARTITIONS,
                 share_topic: Callable[[], bool] | None = None) -> None:
        self.view = view
        self.offsets_partitions = offsets_partitions
        self.txn_partitions = txn_partitions
        self.share_partitions = share_partitions  # __share_group_state's partition count (cluster mode: the topic's)
        self.txn_topic = txn_topic  # cluster mode: whether __transaction_state exists (its creation starts if not)
        self.share_topic = share_topic  # the same for __share_group_state
        self.access = access or Access()

    def refused(self, ctx: RequestContext, key_type: int, key: str) -> ErrorCode | None:
        """KafkaApis: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or transactional id
        (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) the key names."""
        access = self.access
        if not access.enabled:
            return None
        if key_type == GROUP and not access.group(ctx, Op.DESCRIBE, key):
            return ErrorCode.group_authorization_failed
        if key_type == TRANSACTION and not access.allows(ctx, Op.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return ErrorCode.transactional_id_authorization_failed
        if key_type == SHARE and not access.cluster(ctx, Op.CLUSTER_ACTION):
            return ErrorCode.cluster_authorization_failed
        return None

    def locate(self, key_type: int, key: str, listener: str = "",
               refused: ErrorCode | None = None, version: int = SHARE_FROM) -> tuple[ErrorCode, Fields]:
        """The error and the endpoint (Kafka's "no node" unless the error is NONE) for one key."""
        code = refused or error_for(key_type, key, version)
        if code is not ErrorCode.none:
            return code, NO_NODE
        view = self.view
        if key_type == TRANSACTION:
            if self.txn_topic is not None and not self.txn_topic():
                return ErrorCode.coordinator_not_available, NO_NODE  # Kafka: the topic is being created
            leader = view.leader(TRANSACTION_STATE_TOPIC, transaction_partition_for(key, self.txn_partitions))
        elif key_type == SHARE:
            if self.share_topic is not None and not self.share_topic():
                return ErrorCode.coordinator_not_available, NO_NODE  # Kafka: the topic is being created
            leader = view.leader(SHARE_GROUP_STATE_TOPIC, share_state_partition_for(key, self.share_partitions()))
        else:
            leader = view.leader(OFFSETS_TOPIC, partition_for(key, self.offsets_partitions))
        broker: Broker | None = view.broker(leader)
        if broker is not None:
            broker = broker.on(listener)  # None: the coordinator has no listener of the client's name
        if broker is None:  # no leader now (or it is gone): retriable
            return ErrorCode.coordinator_not_available, NO_NODE
        return code, {"node_id": broker.node_id, "host": broker.host, "port": broker.port}

    def handle(self, ctx: RequestContext, request: FindCoordinatorRequest) -> object:
        cls = API_TABLE[ApiKey.FIND_COORDINATOR].responses[ctx.api_version]
        key_type = getattr(request, "key_type", GROUP)
        if ctx.api_version >= BATCHED_FROM:
            if TYPE_CHECKING:  # annotations only (no code on the request's path): v4+ batch their keys
                assert not isinstance(request, FindCoordinatorV0 | FindCoordinatorV1 | FindCoordinatorV2
                                      | FindCoordinatorV3)
            coordinators = []
            for key in request.coordinator_keys:
                code, endpoint = self.locate(key_type, key, ctx.listener, self.refused(ctx, key_type, key),
                                             ctx.api_version)
                coordinators.append({"key": key, "error_code": code, "error_message": None, **endpoint})
            return build(cls, throttle_time=NO_THROTTLE, coordinators=coordinators)
        if TYPE_CHECKING:
            assert isinstance(request, FindCoordinatorV0 | FindCoordinatorV1 | FindCoordinatorV2 | FindCoordinatorV3)
        code, endpoint = self.locate(key_type, request.key, ctx.listener, self.refused(ctx, key_type, request.key))
        return build(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=error_message(code),
                     **endpoint)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = FindCoordinatorHandler(services.view, services.groups.settings.offsets_partitions, services.access,
                                     services.txn.settings.num_partitions, services.txn_topic,
                                     services.share.coordinator.num_partitions, services.share_topic)
    dispatcher.register(ApiKey.FIND_COORDINATOR, handler.handle)
