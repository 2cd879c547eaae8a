"""CreateAcls, DescribeAcls and DeleteAcls v1-v3 (Kafka 4 dropped v0), as Kafka's AclApis answers them.

Without an authorizer every answer is SECURITY_DISABLED ("No Authorizer is configured."). CreateAcls and
DeleteAcls need ALTER on the cluster, DescribeAcls DESCRIBE (else CLUSTER_AUTHORIZATION_FAILED). Each creation
is validated alone (coordinator/security/acl_model.py); the valid ones are stored together. DescribeAcls groups
the matching ACLs by resource pattern; DeleteAcls answers per filter with the ACLs it removed."""

from __future__ import annotations

from itertools import groupby
from typing import TYPE_CHECKING, Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import error_code_for
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import AclBinding, AclError, acl_filter, binding
from coordinator.security.acl_store import Acls
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

if TYPE_CHECKING:
    from protocol.request_types import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

log = structlog.get_logger(__name__)

DISABLED = "No Authorizer is configured."
NOT_AUTHORIZED = "Cluster authorization failed."


def _filter_of(item: Any) -> Any:
    return acl_filter(item.resource_type_filter, item.resource_name_filter, item.pattern_type_filter,
                      item.principal_filter, item.host_filter, item.operation, item.permission_type)


def _entry(acl: AclBinding) -> dict[str, Any]:
    return {"principal": acl.principal, "host": acl.host, "operation": int(acl.operation),
            "permission_type": int(acl.permission)}


class AclsAdmin:
    def __init__(self, acls: Acls | None, access: Access) -> None:
        self.acls = acls
        self.access = access

    def _refusal(self, ctx: RequestContext, operation: Op) -> tuple[ErrorCode, str] | None:
        if self.acls is None:
            return ErrorCode.security_disabled, DISABLED
        if not self.access.cluster(ctx, operation):
            return ErrorCode.cluster_authorization_failed, NOT_AUTHORIZED
        return None

    async def create(self, ctx: RequestContext, request: CreateAclsRequest) -> object:
        cls = API_TABLE[ApiKey.CREATE_ACLS].responses[ctx.api_version]
        refusal = self._refusal(ctx, Op.ALTER)
        results: list[tuple[ErrorCode, str | None]]
        if refusal is not None:
            results = [refusal] * len(request.creations)
        else:
            assert self.acls is not None
            bindings = [binding(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                                c.operation, c.permission_type) for c in request.creations]
            try:
                results = await self.acls.create(bindings)
            except Exception as exc:  # the store failed: nothing was created
                log.warning("ACLs not created", error=repr(exc))
                results = [(error_code_for(exc), str(exc) or None)] * len(bindings)
        return build(cls, throttle_time=NO_THROTTLE,
                     results=[{"error_code": code, "error_message": message} for code, message in results])

    def describe(self, ctx: RequestContext, request: DescribeAclsRequest) -> object:
        cls = API_TABLE[ApiKey.DESCRIBE_ACLS].responses[ctx.api_version]
        refusal = self._refusal(ctx, Op.DESCRIBE)
        if refusal is None:
            assert self.acls is not None
            wanted = _filter_of(request)
            try:
                wanted.validate()
            except AclError as exc:
                refusal = (exc.code, str(exc))
        if refusal is not None:
            return build(cls, throttle_time=NO_THROTTLE, error_code=refusal[0], error_message=refusal[1],
                         resources=[])
        found = self.acls.authorizer.describe(wanted)  # type: ignore[union-attr]
        resources = [{"resource_type": int(key[0]), "resource_name": key[1], "pattern_type": int(key[2]),
                      "acls": [_entry(acl) for acl in group]}
                     for key, group in groupby(found, key=lambda a: (a.resource_type, a.name, a.pattern_type))]
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                     resources=resources)

    async def delete(self, ctx: RequestContext, request: DeleteAclsRequest) -> object:
        cls = API_TABLE[ApiKey.DELETE_ACLS].responses[ctx.api_version]
        refusal = self._refusal(ctx, Op.ALTER)
        if refusal is not None:
            results: list[tuple[ErrorCode, str | None, list[AclBinding]]] = [(*refusal, [])] * len(request.filters)
        else:
            assert self.acls is not None
            try:
                results = await self.acls.delete([_filter_of(f) for f in request.filters])
            except Exception as exc:  # the store failed: nothing was deleted
                log.warning("ACLs not deleted", error=repr(exc))
                results = [(error_code_for(exc), str(exc) or None, [])] * len(request.filters)
        return build(cls, throttle_time=NO_THROTTLE, filter_results=[
            {"error_code": code, "error_message": message, "matching_acls": [
                {"error_code": ErrorCode.none, "error_message": None, "resource_type": int(acl.resource_type),
                 "resource_name": acl.name, "pattern_type": int(acl.pattern_type), **_entry(acl)}
                for acl in matching]}
            for code, message, matching in results])


def register(dispatcher: Dispatcher, services: Services) -> None:
    admin = AclsAdmin(services.acls, services.access)
    dispatcher.register(ApiKey.CREATE_ACLS, admin.create)
    dispatcher.register(ApiKey.DESCRIBE_ACLS, admin.describe)
    dispatcher.register(ApiKey.DELETE_ACLS, admin.delete)
