"""DescribeCluster v0-v1, as a Kafka broker answers it (KafkaApis.handleDescribeCluster,
AuthHelper.computeDescribeClusterResponse).

The cluster id, the live brokers as the cluster view lists them (rack null), and the controller:
the view's controller id, or -1 when that node is not among the brokers. A broker serves the BROKER
endpoint type (1): a request for CONTROLLER (2) gets MISMATCHED_ENDPOINT_TYPE, any other type
UNSUPPORTED_ENDPOINT_TYPE (both INVALID_REQUEST at v0, which cannot name a type). Cluster authorized
operations are filled when asked for: with no authorizer, every cluster operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.cluster.view import listener_brokers
from coordinator.handlers.metadata import CLUSTER_OPERATIONS
from coordinator.handlers.wire_values import NO_THROTTLE, NOT_REQUESTED
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

if TYPE_CHECKING:
    from protocol.request_types import DescribeClusterRequest

BROKER, CONTROLLER = 1, 2
_TYPE_NAMES = {BROKER: "BROKER", CONTROLLER: "CONTROLLER"}


class DescribeClusterHandler:
    def __init__(self, services: Services) -> None:
        self.node = services.node
        self.view = services.view
        self.access = services.access

    def handle(self, ctx: RequestContext, request: DescribeClusterRequest) -> object:
        version = ctx.api_version
        cls = API_TABLE[ApiKey.DESCRIBE_CLUSTER].responses[version]
        wanted = getattr(request, "endpoint_type", BROKER)
        if wanted != BROKER:
            if wanted in _TYPE_NAMES:
                code = ErrorCode.mismatched_endpoint_type
                message = (f"The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
                           f"type {_TYPE_NAMES[wanted]}")
            else:
                code, message = ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {wanted}"
            return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.invalid_request if version == 0
                         else code, error_message=message, endpoint_type=BROKER, cluster_id="", controller_id=-1,
                         brokers=[], cluster_authorized_operations=NOT_REQUESTED)
        brokers = listener_brokers(self.view.brokers(), ctx.listener)
        controller = self.view.controller_id()
        if all(broker.node_id != controller for broker in brokers):
            controller = -1
        ops = self.access.cluster_operations(ctx, CLUSTER_OPERATIONS) \
            if request.include_cluster_authorized_operations else NOT_REQUESTED
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                     endpoint_type=BROKER, cluster_id=self.node.cluster_id, controller_id=controller,
                     brokers=[{"broker_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                              for b in brokers],
                     cluster_authorized_operations=ops)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.DESCRIBE_CLUSTER, DescribeClusterHandler(services).handle)
