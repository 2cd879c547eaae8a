"""SaslHandshake and SaslAuthenticate on a connection that is past authentication, or on a listener
without SASL: ILLEGAL_SASL_STATE, as Kafka's KafkaApis answers them (handleSaslHandshakeRequest,
handleSaslAuthenticateRequest). Before authentication a SASL listener's connection answers them itself
(coordinator/security/sasl_gate.py)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.sasl_gate import SESSION_LIFETIME_FROM
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey

if TYPE_CHECKING:
    from protocol.request_types import SaslAuthenticateRequest, SaslHandshakeRequest

_HANDSHAKE = API_TABLE[ApiKey.SASL_HANDSHAKE].responses
_AUTHENTICATE = API_TABLE[ApiKey.SASL_AUTHENTICATE].responses
NO_SESSION_LIFETIME = datetime.timedelta(0)


def handshake(ctx: RequestContext, _request: SaslHandshakeRequest) -> object:
    return _HANDSHAKE[ctx.api_version](error_code=ErrorCode.illegal_sasl_state, mechanisms=())


def authenticate(ctx: RequestContext, _request: SaslAuthenticateRequest) -> object:
    extra = {"session_lifetime": NO_SESSION_LIFETIME} if ctx.api_version >= SESSION_LIFETIME_FROM else {}
    return _AUTHENTICATE[ctx.api_version](
        error_code=ErrorCode.illegal_sasl_state, auth_bytes=b"",
        error_message="SaslAuthenticate request received after successful authentication", **extra)


def register(dispatcher: Dispatcher, _services: Services) -> None:
    dispatcher.register(ApiKey.SASL_HANDSHAKE, handshake)
    dispatcher.register(ApiKey.SASL_AUTHENTICATE, authenticate)
