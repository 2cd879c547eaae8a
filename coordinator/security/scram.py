"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, as Kafka's ScramSaslServer.

Two client messages: client-first (`n,[a=<authzid>],n=<user>,r=<nonce>[,<extensions>]`) is answered with
server-first (`r=<client nonce><server nonce>,s=<salt>,i=<iterations>`); client-final
(`c=<channel binding>,r=<nonce>,p=<proof>`) is checked against the user's StoredKey and answered with
server-final (`v=<server signature>`). Only a credential's keys are used, never a password.

The messages must match Kafka's grammar (ScramMessages: ASCII user names, `m=` and `<letters>=<value>`
extensions, padded base64). Failures are AuthenticationFailed with the message Kafka's authenticator sends: a
malformed message, an unknown user, a wrong proof all read "Authentication failed during authentication due to
invalid credentials with SASL mechanism <name>" (Kafka answers every SaslException so), so a client cannot tell
which; `detail` says which for the log. Only an authorization id other than the user is told as such, as Kafka does.

Differences from Kafka, on purpose: the channel binding must be the client-first message's gs2 header (RFC 5802
asks it; Kafka only hashes it into the proof); the proof is checked over the messages as sent (RFC 5802) where Kafka
rebuilds them from their parts (the same bytes for every client seen: they only differ for a client-final message
with extensions or an `m=` field); a proof of the wrong length fails like a wrong one (Kafka's xor throws and the
connection closes unanswered). Delegation tokens (the `tokenauth=true` extension) are not supported: they fail as
on a Kafka broker that has none.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from coordinator.security.errors import AUTHORIZATION_ID_MISMATCH, AuthenticationFailed

MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations, both mechanisms
MAX_ITERATIONS = 16384  # ScramMechanism.maxIterations (ScramControlManager.MAX_ITERATIONS)
_HASHES = {1: "sha256", 2: "sha512"}


class ScramMechanism(Enum):
    """Kafka's SCRAM mechanisms; the value is the mechanism's type in Alter/DescribeUserScramCredentials."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """The SASL name: SCRAM-SHA-256, SCRAM-SHA-512."""
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        """The hashlib name of the hash (and of its HMAC)."""
        return _HASHES[self.value]

    @property
    def type(self) -> int:
        return self.value

    @property
    def min_iterations(self) -> int:
        return MIN_ITERATIONS

    @property
    def max_iterations(self) -> int:
        return MAX_ITERATIONS

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism | None:
        return next((mechanism for mechanism in cls if mechanism.mechanism_name == name), None)

    @classmethod
    def from_type(cls, mechanism_type: int) -> ScramMechanism | None:
        return next((mechanism for mechanism in cls if mechanism.value == mechanism_type), None)


@dataclass(frozen=True)
class ScramCredential:
    """What a server keeps of a SCRAM password (Kafka's ScramCredential): enough to check a proof, not to make one."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations}, salt=[hidden], keys=[hidden])"


def credential_from_salted_password(mechanism: ScramMechanism, salted_password: bytes, salt: bytes,
                                    iterations: int) -> ScramCredential:
    """The credential of SaltedPassword = Hi(password, salt, iterations), which is what AlterUserScramCredentials
    sends: StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key")."""
    digest = mechanism.hash_name
    client_key = hmac.digest(salted_password, b"Client Key", digest)
    return ScramCredential(salt, hashlib.new(digest, client_key).digest(),
                           hmac.digest(salted_password, b"Server Key", digest), iterations)


def credential_from_password(mechanism: ScramMechanism, password: str, salt: bytes | None = None,
                             iterations: int = MIN_ITERATIONS) -> ScramCredential:
    """A credential made here from a password (UTF-8, not normalised, as Kafka's ScramFormatter); a random salt
    unless one is given. Hi() of RFC 5802 is PBKDF2 with the mechanism's HMAC."""
    salt = secrets.token_bytes(32) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)
    return credential_from_salted_password(mechanism, salted, salt, iterations)


# ScramMessages' grammar (Java's [\x01-\x7F&&[^=,]] is \x01-\x7F without ',' and '=')
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)(?P<bare>(?:m={_VALUE},)?"
                           rf"n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))")
_CLIENT_FINAL = re.compile(rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS})"
                           rf",p=(?P<proof>{_BASE64})")
TOKEN_AUTH = "tokenauth"  # ScramLoginModule.TOKEN_AUTH_CONFIG: the extension of delegation-token authentication


def username_of(saslname: str) -> str:
    """RFC 5802's saslname decoded: '=2C' is ',' and '=3D' is '=' (the grammar allows no other '=')."""
    return saslname.replace("=2C", ",").replace("=3D", "=")


def saslname_of(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def _extensions(text: str) -> dict[str, str]:
    """`,k=v,k2=v2` (the grammar's extensions) as Kafka's Utils.parseMap reads them: the last of a key wins."""
    return dict(item.split("=", 1) for item in text.split(",")[1:])


def secure_random_string() -> str:
    """Kafka's ScramFormatter.secureRandomString: 130 random bits in base 36."""
    number, digits = secrets.randbits(130), []
    while True:
        number, digit = divmod(number, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
        if not number:
            return "".join(reversed(digits))


# ScramSaslServer's states
_RECEIVE_FIRST = "RECEIVE_CLIENT_FIRST_MESSAGE"
_RECEIVE_FINAL = "RECEIVE_CLIENT_FINAL_MESSAGE"
_COMPLETE = "COMPLETE"
_FAILED = "FAILED"


class ScramServer:
    """One SCRAM authentication. `lookup(user)` gives the user's credential for this mechanism, or None.
    `username` is the user the client claims (for the log) and is authenticated only once `complete`."""

    __slots__ = ("mechanism", "lookup", "server_nonce", "username", "complete", "_state", "_credential",
                 "_gs2_header", "_client_first_bare", "_server_first", "_nonce")

    def __init__(self, mechanism: ScramMechanism, lookup: Callable[[str], ScramCredential | None],
                 server_nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.lookup = lookup
        self.server_nonce = secure_random_string() if server_nonce is None else server_nonce
        self.username: str | None = None
        self.complete = False
        self._state = _RECEIVE_FIRST
        self._credential: ScramCredential | None = None
        self._gs2_header = self._client_first_bare = self._server_first = self._nonce = ""

    def evaluate(self, message: bytes) -> bytes:
        """The answer to the client's next message; AuthenticationFailed ends the exchange."""
        text = message.decode("utf-8", errors="replace")  # as Java's new String(); the grammar is ASCII anyway
        try:
            if self._state == _RECEIVE_FIRST:
                return self._client_first(text)
            if self._state == _RECEIVE_FINAL:
                return self._client_final(text)
            raise self._failure(f"Unexpected challenge in Sasl server state {self._state}")
        except AuthenticationFailed:
            self._state, self._credential, self.complete = _FAILED, None, False
            raise

    def _failure(self, detail: str) -> AuthenticationFailed:
        """A SaslException of Kafka's: the client is told no more than that the credentials are invalid."""
        return AuthenticationFailed("Authentication failed during authentication due to invalid credentials with "
                                    f"SASL mechanism {self.mechanism.mechanism_name}", detail)

    def _client_first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise self._failure("Invalid SCRAM client first message format")
        self.username = username = username_of(match["saslname"])
        if _extensions(match["extensions"]).get(TOKEN_AUTH, "").lower() == "true":  # Boolean.parseBoolean
            raise self._failure("Token Authentication failed: delegation tokens are not supported")
        try:
            credential = self.lookup(username)
        except Exception as exc:
            raise self._failure(f"Authentication failed: Credentials could not be obtained ({type(exc).__name__})") \
                from None
        if credential is None:
            raise self._failure("Authentication failed: Invalid user credentials")
        if match["authzid"] and match["authzid"] != username:  # Kafka compares the authzid as sent
            raise AuthenticationFailed(AUTHORIZATION_ID_MISMATCH)
        if credential.iterations < self.mechanism.min_iterations:
            raise self._failure(f"Iterations {credential.iterations} is less than the minimum "
                                f"{self.mechanism.min_iterations} for {self.mechanism.mechanism_name}")
        self._credential = credential
        self._gs2_header, self._client_first_bare = match["gs2"], match["bare"]
        self._nonce = match["nonce"] + self.server_nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._state = _RECEIVE_FINAL
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        credential = self._credential
        assert credential is not None
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise self._failure("Invalid SCRAM client final message format")
        if not match["nonce"].endswith(self._nonce):  # Kafka's check: librdkafka before 1.9 sent its nonce twice
            raise self._failure("Invalid client nonce in the final client message.")
        try:
            channel = base64.b64decode(match["channel"], validate=True)
            proof = base64.b64decode(match["proof"], validate=True)
        except (binascii.Error, ValueError):  # the grammar admits only valid base64; kept as a guard
            raise self._failure("Invalid SCRAM client final message format") from None
        if channel != self._gs2_header.encode():
            raise self._failure("The channel binding is not the gs2 header of the client first message")
        auth_message = f"{self._client_first_bare},{self._server_first},{match['without_proof']}".encode()
        digest = self.mechanism.hash_name
        client_signature = hmac.digest(credential.stored_key, auth_message, digest)
        if len(proof) != len(client_signature):
            raise self._failure("Invalid client credentials (a proof of the wrong length)")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
        if not hmac.compare_digest(hashlib.new(digest, client_key).digest(), credential.stored_key):
            raise self._failure("Invalid client credentials")
        server_signature = hmac.digest(credential.server_key, auth_message, digest)
        self._state, self._credential, self.complete = _COMPLETE, None, True
        return b"v=" + base64.b64encode(server_signature)
