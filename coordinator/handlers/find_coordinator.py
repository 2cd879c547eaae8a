"""FindCoordinator v0-v6: every group is coordinated by this node.

In the embedded single-process mode this node leads every __consumer_offsets
partition, so a group key (whatever partition_for places it on) answers with this
node. Transaction keys get COORDINATOR_NOT_AVAILABLE (no transaction coordinator),
share keys INVALID_REQUEST (as Kafka without a share coordinator), unknown key types
INVALID_REQUEST. An empty group id gets INVALID_GROUP_ID. v4+ batches keys, each with
its own error; before v4 an error answers with Kafka's "no node" (-1, "", -1) and the
error's default message.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.errors import error_message
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.node import Node
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

GROUP, TRANSACTION, SHARE = 0, 1, 2
BATCHED_FROM = 4


def locate(key_type: int, key: str) -> ErrorCode:
    if key_type == GROUP:
        return ErrorCode.invalid_group_id if not key else ErrorCode.none
    if key_type == TRANSACTION:
        return ErrorCode.coordinator_not_available
    return ErrorCode.invalid_request  # SHARE without a share coordinator, or an unknown type


class FindCoordinatorHandler:
    def __init__(self, node: Node) -> None:
        self.node = node

    def endpoint(self, code: ErrorCode) -> dict:
        if code is ErrorCode.none:
            return {"node_id": self.node.node_id, "host": self.node.host, "port": self.node.port}
        return {"node_id": -1, "host": "", "port": -1}

    def handle(self, ctx: RequestContext, request) -> object:
        cls = API_TABLE[ApiKey.FIND_COORDINATOR].responses[ctx.api_version]
        key_type = getattr(request, "key_type", GROUP)
        if ctx.api_version >= BATCHED_FROM:
            coordinators = []
            for key in request.coordinator_keys:
                code = locate(key_type, key)
                coordinators.append({"key": key, "error_code": code, "error_message": None, **self.endpoint(code)})
            return build(cls, throttle_time=NO_THROTTLE, coordinators=coordinators)
        code = locate(key_type, request.key)
        return build(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=error_message(code),
                     **self.endpoint(code))


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.FIND_COORDINATOR, FindCoordinatorHandler(services.node).handle)
