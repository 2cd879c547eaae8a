"""ShareAcknowledge v1-v2 (KIP-932): acknowledgements without a fetch, as Kafka's KafkaApis.
handleShareAcknowledgeRequest and SharePartitionManager.acknowledgeSessionUpdate answer them:

* READ on the group, else GROUP_AUTHORIZATION_FAILED for the whole request; an empty group or member id is
  INVALID_REQUEST;
* the share session: epoch 0 is INVALID_SHARE_SESSION_EPOCH (an acknowledgement never opens a session), no
  session is SHARE_SESSION_NOT_FOUND, another epoch than the session's INVALID_SHARE_SESSION_EPOCH; -1 closes the
  session after the acknowledgements (what the member holds in its partitions goes back);
* per partition: READ on its topic, UNKNOWN_TOPIC_ID, the acknowledgement checks (INVALID_REQUEST) and
  INVALID_RECORD_STATE, answered once the state is durable.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.errors import error_message
from coordinator.handlers.share_fetch import (
    NO_LEADER,
    ShareRequests,
    grouped,
    lock_timeout,
    request_acks,
    share_requests,
)
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Op
from coordinator.services import Services
from coordinator.share.sessions import FINAL_EPOCH
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build


class ShareAcknowledgeHandler:
    def __init__(self, requests: ShareRequests) -> None:
        self.requests = requests

    def error(self, version: int, code: ErrorCode, message: str | None = None) -> Any:
        return build(API_TABLE[ApiKey.SHARE_ACKNOWLEDGE].responses[version], throttle_time=NO_THROTTLE,
                     error_code=code, error_message=message if message is not None else error_message(code),
                     acquisition_lock_timeout=lock_timeout(0), responses=[], node_endpoints=[])

    def handle(self, ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        requests = self.requests
        if requests.access.enabled and not requests.access.group(ctx, Op.READ, request.group_id or ""):
            return self.error(version, ErrorCode.group_authorization_failed)
        if not request.group_id or not request.member_id:
            return self.error(version, ErrorCode.invalid_request, "GroupId and MemberId must be set.")
        answer = requests.partitions.sessions.acknowledge_update(request.group_id, request.member_id,
                                                                 request.share_session_epoch)
        if answer.error is not ErrorCode.none:
            return self.error(version, answer.error)
        return self.serve(ctx, request)

    async def serve(self, ctx: RequestContext, request: Any) -> Any:
        requests = self.requests
        group_id, member_id = request.group_id, request.member_id
        acks = request_acks(request.topics)
        acked = await requests.acknowledge_all(ctx, group_id, member_id, acks, bool(getattr(request, "is_renew_ack",
                                                                                           False)))
        if request.share_session_epoch == FINAL_EPOCH:
            requests.close_session(group_id, member_id)
        answers = {key: {"partition_index": key[1], "error_code": acked.get(key, (ErrorCode.none, None))[0],
                         "error_message": acked.get(key, (ErrorCode.none, None))[1], "current_leader": NO_LEADER}
                   for key in acks}
        lock_ms = requests.partitions.settings_for(group_id).record_lock_duration_ms
        endpoints = requests.leader_hints(ctx, answers)
        return build(API_TABLE[ApiKey.SHARE_ACKNOWLEDGE].responses[ctx.api_version], throttle_time=NO_THROTTLE,
                     error_code=ErrorCode.none, error_message=None, acquisition_lock_timeout=lock_timeout(lock_ms),
                     responses=grouped(answers), node_endpoints=endpoints)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.SHARE_ACKNOWLEDGE, ShareAcknowledgeHandler(share_requests(services)).handle)
