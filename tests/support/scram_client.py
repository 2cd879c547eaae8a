"""The client side of SCRAM (RFC 5802), for tests that authenticate over the wire with our own frames."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from typing import Any


def client_final(first_bare: str, server_first: str, password: bytes, salt: bytes, nonce: str, iterations: int = 4096,
                 header: bytes = b"n,,", digest: str = "sha256") -> bytes:
    """The client-final message with its proof, for the exchange so far."""
    salted = hashlib.pbkdf2_hmac(digest, password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    without_proof = f"c={base64.b64encode(header).decode()},r={nonce}"
    signature = hmac.new(hashlib.new(digest, client_key).digest(),
                         f"{first_bare},{server_first},{without_proof}".encode(), digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def scram_exchange(send: Callable[[bytes], tuple[Any, bytes]], user: str, password: str,
                   digest: str = "sha512") -> Any:
    """Authenticate: `send(token) -> (error code, server token)`; the last error code (0 / NONE on success)."""
    first_bare = f"n={user},r={secrets.token_urlsafe(18)}"
    code, server_first = send(f"n,,{first_bare}".encode())
    if code:
        return code
    fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
    final = client_final(first_bare, server_first.decode(), password.encode(), base64.b64decode(fields["s"]),
                         fields["r"], int(fields["i"]), digest=digest)
    code, _server_final = send(final)
    return code
