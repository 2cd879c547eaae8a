"""A SCRAM client (RFC 5802) written from the RFC alone, with nothing of coordinator/security/scram.py, to drive
and check the server side: `first()`, `final(server_first)`, then `verify(server_final)`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from typing import Any


class ScramClient:
    def __init__(self, digest: str, username: str, password: str, nonce: str | None = None,
                 authzid: str = "") -> None:
        self.digest = digest  # hashlib's name: sha256, sha512
        self.username = username
        self.password = password
        self.nonce = nonce or secrets.token_urlsafe(18)
        saslname = username.replace("=", "=3D").replace(",", "=2C")
        self.gs2_header = f"n,{'a=' + authzid if authzid else ''},"
        self.first_bare = f"n={saslname},r={self.nonce}"
        self.auth_message = b""
        self.salted_password = b""

    def first(self) -> bytes:
        return (self.gs2_header + self.first_bare).encode()

    def final(self, server_first: bytes, nonce: str | None = None) -> bytes:
        """The client-final message; `nonce` overrides the combined nonce the server sent (to tamper with it)."""
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        assert fields["r"].startswith(self.nonce)
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        self.salted_password = hashlib.pbkdf2_hmac(self.digest, self.password.encode(), salt, iterations)
        client_key = hmac.new(self.salted_password, b"Client Key", self.digest).digest()
        stored_key = hashlib.new(self.digest, client_key).digest()
        without_proof = f"c={base64.b64encode(self.gs2_header.encode()).decode()},r={nonce or fields['r']}"
        self.auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, self.auth_message, self.digest).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        server_key = hmac.new(self.salted_password, b"Server Key", self.digest).digest()
        expected = hmac.new(server_key, self.auth_message, self.digest).digest()
        return server_final == b"v=" + base64.b64encode(expected)


def scram_exchange(send: Callable[[bytes], tuple[Any, bytes]], user: str, password: str,
                   digest: str = "sha512") -> Any:
    """Authenticate over SaslAuthenticate: `send(token) -> (error code, server token)`; the last error code (0 /
    NONE on success)."""
    client = ScramClient(digest, user, password)
    code, server_first = send(client.first())
    if code:
        return code
    code, _server_final = send(client.final(server_first))
    return code


def authenticate_scram(client: Any, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Any:
    """SaslHandshake v1 + SaslAuthenticate on a WireClient's connection; the last error code (NONE on success)."""
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    handshake = client.call(SaslHandshakeRequest(mechanism=mechanism))
    if handshake.error_code:
        return handshake.error_code

    def send(token: bytes) -> tuple[Any, bytes]:
        answer = client.call(SaslAuthenticateRequest(auth_bytes=token))
        return answer.error_code, answer.auth_bytes

    return scram_exchange(send, user, password, "sha512" if mechanism.endswith("512") else "sha256")
