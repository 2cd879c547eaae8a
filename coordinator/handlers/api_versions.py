"""ApiVersions v0-v4, generated from the API table, with KIP-511's fallback.

A request above our highest version gets a v0 response (header v0) with
UNSUPPORTED_VERSION and the full list, so the client can retry at a version we know.
v3+ requests carry client software name/version, which must match Kafka's pattern or
the answer is INVALID_REQUEST (as ApiVersionsRequest.isValid).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build
from protocol.codec import Encoded

if TYPE_CHECKING:
    from protocol.request_types import ApiVersionsRequest, ApiVersionsV0, ApiVersionsV1, ApiVersionsV2

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")

#: v3+: the features this server supports and has finalized, as a Kafka 4.2 broker reports them for what it runs:
#: share.version 1 (KIP-932 share groups, generally available in 4.2: ShareGroupHeartbeat, ShareFetch, ...).
#: Other features (metadata.version, transaction.version, group.version...) are not reported: a client then
#: assumes their level 0, which is what this server speaks (e.g. transaction version 1, no EndTxn v5).
SUPPORTED_FEATURES = [{"name": "share.version", "min_version": 0, "max_version": 1}]
FINALIZED_FEATURES = [{"name": "share.version", "min_version_level": 1, "max_version_level": 1}]
FINALIZED_FEATURES_EPOCH = 1  # levels never change at run time
FEATURES_FROM = 3


def _api_keys() -> list[Fields]:
    return [
        {"api_key": spec.key, "min_version": spec.min_version, "max_version": spec.max_version}
        for spec in sorted(API_TABLE.values(), key=lambda s: s.key)
    ]


def features() -> Fields:
    return {"supported_features": SUPPORTED_FEATURES, "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
            "finalized_features": FINALIZED_FEATURES}


class ApiVersionsHandler:
    """Every answer is a constant, built (and the usual one encoded) once."""

    def __init__(self) -> None:
        spec = API_TABLE[ApiKey.API_VERSIONS]
        keys = _api_keys()
        self.ok = {
            version: Encoded.of(build(cls, error_code=ErrorCode.none, api_keys=keys, throttle_time=NO_THROTTLE,
                                      **(features() if version >= FEATURES_FROM else {})))
            for version, cls in spec.responses.items()
        }
        self.invalid = {
            version: build(cls, error_code=ErrorCode.invalid_request, api_keys=[], throttle_time=NO_THROTTLE)
            for version, cls in spec.responses.items()
        }
        self.unsupported = build(spec.responses[0], error_code=ErrorCode.unsupported_version, api_keys=keys)

    def handle(self, ctx: RequestContext, request: ApiVersionsRequest) -> object:
        version = ctx.api_version
        if version >= 3:
            if TYPE_CHECKING:  # annotations only (no code on the request's path): v3+ name the client's software
                assert not isinstance(request, ApiVersionsV0 | ApiVersionsV1 | ApiVersionsV2)
            if not (_SOFTWARE.match(request.client_software_name)
                    and _SOFTWARE.match(request.client_software_version)):
                return self.invalid[version]
        return self.ok[version]

    def too_new(self) -> object:
        """KIP-511: the v0 body a request above our highest version gets."""
        return self.unsupported


def register(dispatcher: Dispatcher, services: Services) -> None:
    api_versions = ApiVersionsHandler()
    dispatcher.register(ApiKey.API_VERSIONS, api_versions.handle)
    dispatcher.on_unsupported_api_versions(api_versions.too_new)
