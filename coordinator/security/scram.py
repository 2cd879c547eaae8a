"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, as Kafka's ScramSaslServer.

Two client messages: client-first (`n,[a=<authzid>],n=<user>,r=<nonce>[,<extensions>]`) is answered with
server-first (`r=<nonce><server nonce>,s=<salt>,i=<iterations>`); client-final
(`c=<channel binding>,r=<nonce>,p=<proof>`) is checked against the user's StoredKey and answered with
server-final (`v=<server signature>`). Only the credential's keys are used (scram_store.py), never a password.

Failures are AuthenticationFailed with the message Kafka's authenticator sends: a malformed message, an unknown
user or a wrong proof all read "Authentication failed during authentication due to invalid credentials with SASL
mechanism <name>" (Kafka answers a SaslException so), so a client cannot tell which; `detail` is for the log.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

from coordinator.security.errors import AuthenticationFailed
from coordinator.security.scram_store import MECHANISM_TYPES, MECHANISMS, MIN_ITERATIONS, StoredCredential

_CLIENT_FIRST = re.compile(r"n,(?:a=(?P<authzid>[^,]*))?,n=(?P<saslname>[^,]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)"
                           r"(?P<extensions>(?:,[A-Za-z0-9]+=[^,]*)*)")
_CLIENT_FINAL = re.compile(r"c=(?P<channel>[A-Za-z0-9+/=]+),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)"
                           r"(?:,[A-Za-z0-9]+=[^,]*)*,p=(?P<proof>[A-Za-z0-9+/=]+)")


class ScramFailed(AuthenticationFailed):
    def __init__(self, mechanism: str, detail: str) -> None:
        super().__init__(f"Authentication failed during authentication due to invalid credentials with SASL "
                         f"mechanism {mechanism}")
        self.detail = detail


def username_of(saslname: str) -> str:
    """RFC 5802's saslname: ',' and '=' arrive as '=2C' and '=3D'; any other '=' is malformed."""
    if re.search(r"=(?!2C|3D)", saslname):
        raise ValueError("invalid '=' escape in the user name")
    return saslname.replace("=2C", ",").replace("=3D", "=")


class ScramExchange:
    """One SCRAM authentication; `lookup(user)` gives the user's credential for this mechanism, or None."""

    __slots__ = ("mechanism", "digest", "lookup", "server_nonce", "username", "complete", "_credential",
                 "_gs2_header", "_client_first_bare", "_server_first", "_nonce")

    def __init__(self, mechanism: str, lookup: Callable[[str], StoredCredential | None],
                 server_nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.digest = MECHANISMS[MECHANISM_TYPES[mechanism]][1]
        self.lookup = lookup
        self.server_nonce = server_nonce or secrets.token_urlsafe(24)
        self.username: str | None = None
        self.complete = False
        self._credential: StoredCredential | None = None
        self._gs2_header = self._client_first_bare = self._server_first = self._nonce = ""

    def evaluate(self, message: bytes) -> bytes:
        if self.complete:
            raise self._fail("a message after the exchange completed")
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("a message that is not UTF-8") from None
        if self._credential is None:
            return self._client_first(text)
        return self._client_final(text)

    def _fail(self, detail: str) -> ScramFailed:
        return ScramFailed(self.mechanism, detail)

    def _client_first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise self._fail("an invalid client-first message")
        try:
            username = username_of(match["saslname"])
        except ValueError as exc:
            raise self._fail(str(exc)) from None
        self.username = username
        if "tokenauth=true" in match["extensions"].lower():
            raise self._fail("token authentication (delegation tokens are not enabled)")
        credential = self.lookup(username)
        if credential is None:
            raise self._fail("no credential for the user")
        authzid = match["authzid"]
        if authzid and username_of(authzid) != username:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
        if credential.iterations < MIN_ITERATIONS:
            raise self._fail(f"the stored credential has {credential.iterations} iterations, below {MIN_ITERATIONS}")
        self._credential = credential
        self._gs2_header = text[:match.start("saslname") - 2]  # "n,[a=...],"
        self._client_first_bare = text[len(self._gs2_header):]
        self._nonce = match["nonce"] + self.server_nonce
        self._server_first = f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},i={credential.iterations}"
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        credential = self._credential
        assert credential is not None
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise self._fail("an invalid client-final message")
        try:
            channel = base64.b64decode(match["channel"], validate=True)
            proof = base64.b64decode(match["proof"], validate=True)
        except (binascii.Error, ValueError):
            raise self._fail("invalid base64 in the client-final message") from None
        if channel != self._gs2_header.encode():
            raise self._fail("the channel binding is not the client-first message's gs2 header")
        if not match["nonce"].endswith(self._nonce):  # Kafka's check: librdkafka before 1.9 sent its nonce twice
            raise self._fail("invalid client nonce in the final client message")
        auth_message = f"{self._client_first_bare},{self._server_first},{text[:match.start('proof') - 3]}".encode()
        client_signature = hmac.new(credential.stored_key, auth_message, self.digest).digest()
        if len(proof) != len(client_signature):
            raise self._fail("a client proof of the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.digest, client_key).digest(), credential.stored_key):
            raise self._fail("invalid client credentials")
        self.complete = True
        server_signature = hmac.new(credential.server_key, auth_message, self.digest).digest()
        return b"v=" + base64.b64encode(server_signature)
