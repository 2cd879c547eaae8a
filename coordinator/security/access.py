"""What handlers ask before they act: may this request's principal, from its host, do an operation on a resource?
Always yes without an authorizer (`authorizer.class.name` unset), as in Kafka. The operation each API needs is
Kafka's (docs: "Operations and Resources on Protocols"); the handlers name it where they ask."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.security.acl_model import CLUSTER_NAME, AclOperation, ResourceType

if TYPE_CHECKING:
    from coordinator.net.dispatch import RequestContext
    from coordinator.security.authorizer import Authorizer

Op = AclOperation


class Access:
    __slots__ = ("authorizer",)

    def __init__(self, authorizer: Authorizer | None = None) -> None:
        self.authorizer = authorizer

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allows(self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        authorizer = self.authorizer
        return authorizer is None or authorizer.authorize(ctx.principal, ctx.client_host, operation, resource_type,
                                                          name)

    def group(self, ctx: RequestContext, operation: AclOperation, group_id: str) -> bool:
        return self.allows(ctx, operation, ResourceType.GROUP, group_id)

    def topic(self, ctx: RequestContext, operation: AclOperation, topic: str) -> bool:
        return self.allows(ctx, operation, ResourceType.TOPIC, topic)

    def cluster(self, ctx: RequestContext, operation: AclOperation) -> bool:
        return self.allows(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def any(self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type allows the operation (Kafka's authorizeByResourceType)."""
        authorizer = self.authorizer
        return authorizer is None or authorizer.authorize_any(ctx.principal, ctx.client_host, operation,
                                                              resource_type)

    def cluster_operations(self, ctx: RequestContext, everything: int) -> int:
        """The cluster's `authorized_operations` (Metadata, DescribeCluster): 0 without DESCRIBE on it, as Kafka."""
        if self.authorizer is None:
            return everything
        if not self.cluster(ctx, Op.DESCRIBE):
            return 0
        return self.operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME, everything)

    def operations(self, ctx: RequestContext, resource_type: ResourceType, name: str, everything: int) -> int:
        """`authorized_operations` of a resource: `everything` (the handler's all-allowed bits) without an
        authorizer."""
        authorizer = self.authorizer
        if authorizer is None:
            return everything
        return authorizer.authorized_operations(ctx.principal, ctx.client_host, resource_type, name)
