"""The failure of an authentication, with the message Kafka sends the client (SaslAuthenticationException).

The message never carries a password, a token or whether a user exists; `detail` says more for the server's
log (Kafka's own SaslException text), and never carries a secret either."""

from __future__ import annotations

INVALID_USERNAME_OR_PASSWORD = "Authentication failed: Invalid username or password"
AUTHORIZATION_ID_MISMATCH = ("Authentication failed: Client requested an authorization id that is different from "
                             "username")


class AuthenticationFailed(Exception):
    """SASL_AUTHENTICATION_FAILED; str(exc) is what the client is told."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = message if detail is None else detail
