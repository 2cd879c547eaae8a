"""SASL/PLAIN (RFC 4616), server side, as Kafka's PlainSaslServer with the JAAS users of its listener.

The client's one message is `[authzid] NUL authcid NUL passwd`; an authorization id, when given, must be the
user itself. The password is compared in constant time."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from coordinator.security.errors import AuthenticationFailed

INVALID = "Authentication failed: Invalid username or password"


class PlainExchange:
    """One PLAIN authentication: `evaluate` takes the client's message and answers an empty challenge."""

    __slots__ = ("users", "username", "complete")

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = users
        self.username: str | None = None
        self.complete = False

    def evaluate(self, message: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed("Authentication failed: PLAIN exchange already complete")
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Authentication failed: the PLAIN message is not UTF-8") from None
        parts = text.split("\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens, got "
                                       f"{min(len(parts), 99)}")
        authorization_id, username, password = parts
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self.users.get(username)
        # compared even for an unknown user, so that the time taken does not say whether the user exists
        matches = hmac.compare_digest((expected or "\0").encode(), password.encode())
        if expected is None or not matches:
            self.username = username
            raise AuthenticationFailed(INVALID)
        if authorization_id and authorization_id != username:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
        self.username = username
        self.complete = True
        return b""
