"""Authorization of requests whose group decides for the whole request (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup): the handler, or with an authorizer a handler that asks first and answers the refusal its API gives
(Kafka: GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.net.dispatch import Handler, RequestContext
from coordinator.security.access import Access, Op

Refusal = Callable[[int, Any], Any]  # (api version, request) -> the refusing response


def group_guarded(access: Access, operation: Op, handler: Handler, refuse: Refusal) -> Handler:
    if not access.enabled:
        return handler

    def guarded(ctx: RequestContext, request: Any) -> Any:
        if not access.group(ctx, operation, request.group_id):
            return refuse(ctx.api_version, request)
        return handler(ctx, request)

    return guarded
