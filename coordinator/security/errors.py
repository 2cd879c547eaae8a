"""The failure of an authentication, with the message Kafka sends the client (SaslAuthenticationException).

The message never carries a password, a token or whether a user exists."""

from __future__ import annotations


class AuthenticationFailed(Exception):
    """SASL_AUTHENTICATION_FAILED; str(exc) is what the client is told."""
