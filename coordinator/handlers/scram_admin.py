"""DescribeUserScramCredentials v0 and AlterUserScramCredentials v0, as a Kafka broker answers them
(ScramImage.describe; ScramControlManager.alterCredentials, coordinator/security/scram_store.py).

Describe: no users (null or empty) lists every user with a credential; a user named twice gets
DUPLICATE_RESOURCE, one without any credential RESOURCE_NOT_FOUND; each found user gets its mechanisms and
iterations, never a salt or key. Alter: per-user results, the valid changes written together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
from kio.schema.errors import ErrorCode

from coordinator.errors import error_code_for
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.scram_store import ScramCredentials, Upsertion
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

if TYPE_CHECKING:
    from protocol.request_types import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest

log = structlog.get_logger(__name__)

NOT_FOUND = "Attempt to describe a user credential that does not exist: "
TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


class ScramAdmin:
    def __init__(self, credentials: ScramCredentials, access: Access | None = None) -> None:
        self.credentials = credentials
        self.access = access or Access()

    def describe(self, ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> object:
        if not self.access.cluster(ctx, Op.DESCRIBE):  # KafkaApis: DESCRIBE on the cluster
            cls = API_TABLE[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS].responses[ctx.api_version]
            return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                         error_message=None, results=[])
        named = [user.name for user in request.users or ()]
        if not named:
            users = {user: False for user in self.credentials.users()}
        else:
            users = {}
            for name in named:
                users[name] = name in users  # True: named more than once
        results = []
        for user, twice in users.items():
            infos = self.credentials.of_user(user)
            if twice:
                code, message = ErrorCode.duplicate_resource, TWICE + user
            elif not infos:
                code, message = ErrorCode.resource_not_found, NOT_FOUND + user
            else:
                code, message = ErrorCode.none, None
            results.append({"user": user, "error_code": code, "error_message": message,
                            "credential_infos": [] if code is not ErrorCode.none else
                            [{"mechanism": mechanism, "iterations": iterations} for mechanism, iterations in infos]})
        cls = API_TABLE[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS].responses[ctx.api_version]
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, results=results)

    async def alter(self, ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> object:
        if not self.access.cluster(ctx, Op.ALTER):  # ControllerApis: ALTER on the cluster, every user refused
            cls = API_TABLE[ApiKey.ALTER_USER_SCRAM_CREDENTIALS].responses[ctx.api_version]
            names = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
            return build(cls, throttle_time=NO_THROTTLE, results=[
                {"user": name, "error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
                for name in names])
        try:
            results = await self.credentials.alter(
                [(d.name, d.mechanism) for d in request.deletions],
                [Upsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password) for u in request.upsertions])
        except Exception as exc:  # the store failed (disk, PostgreSQL): nothing changed, every user says so
            log.warning("SCRAM credentials not changed", error=repr(exc))
            code = error_code_for(exc)
            names = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
            results = [(name, code, str(exc) or None) for name in names]
        cls = API_TABLE[ApiKey.ALTER_USER_SCRAM_CREDENTIALS].responses[ctx.api_version]
        return build(cls, throttle_time=NO_THROTTLE, results=[
            {"user": user, "error_code": code, "error_message": message} for user, code, message in results])


def register(dispatcher: Dispatcher, services: Services) -> None:
    admin = ScramAdmin(services.scram, services.access)
    dispatcher.register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, admin.describe)
    dispatcher.register(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, admin.alter)
