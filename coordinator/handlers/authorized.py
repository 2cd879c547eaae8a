"""Authorization of requests whose group decides for the whole request (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup): the handler, or with an authorizer a handler that asks first and answers the refusal its API gives
(Kafka: GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from coordinator.net.dispatch import RequestContext
from coordinator.security.access import Access, Op


class GroupRequest(Protocol):
    """A request of every version of these APIs: it names its group."""

    @property
    def group_id(self) -> str: ...


R = TypeVar("R", bound=GroupRequest)


def group_guarded(access: Access, operation: Op, handler: Callable[[RequestContext, R], object],
                  refuse: Callable[[int, R], object]) -> Callable[[RequestContext, R], object]:
    """`refuse(api version, request)`: the refusing response."""
    if not access.enabled:
        return handler

    def guarded(ctx: RequestContext, request: R) -> object:
        if not access.group(ctx, operation, request.group_id):
            return refuse(ctx.api_version, request)
        return handler(ctx, request)

    return guarded
