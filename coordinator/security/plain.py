"""SASL/PLAIN (RFC 4616), server side, as Kafka's PlainSaslServer.

The client's one message is `[authzid] NUL authcid NUL passwd` in UTF-8. Every failure is one Kafka sends the client
as it is (a SaslAuthenticationException), so the messages below are Kafka's; none carries the password. Who may log
in is the verifier's business: `jaas_user_verifier` is Kafka's PlainServerCallbackHandler over a listener's
`user_<name>="<password>"` JAAS options.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping

from coordinator.security.errors import AUTHORIZATION_ID_MISMATCH, INVALID_USERNAME_OR_PASSWORD, AuthenticationFailed

MECHANISM = "PLAIN"

Verifier = Callable[[str, str], bool]  # (username, password) -> whether they match


def jaas_user_verifier(users: Mapping[str, str]) -> Verifier:
    """Checks a password against the user's in `users`, in constant time; an unknown user costs the same
    comparison, so the time taken does not say whether the user exists."""

    def verify(username: str, password: str) -> bool:
        expected = users.get(username)
        matches = hmac.compare_digest(("\0" if expected is None else expected).encode(), password.encode())
        return expected is not None and matches

    return verify


class PlainServer:
    """One PLAIN authentication: `evaluate` takes the client's message and answers an empty challenge.
    `username` is the user the client claims (for the log) and is authenticated only once `complete`."""

    __slots__ = ("verify", "username", "complete")

    def __init__(self, verify: Verifier) -> None:
        self.verify = verify
        self.username: str | None = None
        self.complete = False

    def evaluate(self, message: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed("Authentication failed: PLAIN exchange already complete")
        tokens = message.decode("utf-8", errors="replace").split("\0", 3)  # Java's new String() replaces too
        if len(tokens) != 3:  # Kafka counts up to 4
            raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authorization_id, username, password = tokens
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        self.username = username
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        try:
            authenticated = self.verify(username, password)
        except Exception as exc:
            raise AuthenticationFailed("Authentication failed: credentials for user could not be verified",
                                       f"the verifier failed: {type(exc).__name__}") from None
        if not authenticated:
            raise AuthenticationFailed(INVALID_USERNAME_OR_PASSWORD)
        if authorization_id and authorization_id != username:
            raise AuthenticationFailed(AUTHORIZATION_ID_MISMATCH)
        self.complete = True
        return b""
