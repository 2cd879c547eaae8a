"""Who may read the operations endpoint (`http.auth`).

`none` (the default): anyone who reaches http.listener reads every group, topic, offset and lag, whatever the
authorizer lets them do on the Kafka listeners; `http_exposure` says so at start-up (a warning) when an authorizer is
on and the endpoint listens on more than loopback. `basic`: every route but the health probes (`/health/live` and
`/health/ready`, so that orchestrators need no secret) asks for HTTP Basic credentials, checked against the users
Kafka clients log in with: the SCRAM credentials (AlterUserScramCredentials; either mechanism) and the PLAIN JAAS
users of the SASL listeners. With an authorizer on, the principal `User:<name>` must also be allowed DESCRIBE on the
cluster (what ListGroups needs to list every group); else 403. A wrong password is answered 401 after
`connection.failed.authentication.delay.ms`, as Kafka delays a failed SASL authentication.

SCRAM stores no password: a Basic password is checked by deriving the StoredKey again (PBKDF2 over the credential's
iterations, 4,096 or more: milliseconds of CPU), in a worker thread, one at a time, so that a flood of guesses
neither stalls the event loop nor takes every core. A password that matched is remembered (by a keyed hash) while
its credential is unchanged, so a scraper with the right password costs the PBKDF2 once.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import ipaddress
import secrets
import socket
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog
from aiohttp import web

from coordinator.security.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from coordinator.security.authorizer import Authorizer
from coordinator.security.plain import jaas_user_verifier
from coordinator.security.scram import ScramCredential, ScramMechanism, credential_from_password

log = structlog.get_logger(__name__)

OPEN_PATHS = frozenset({"/health/live", "/health/ready"})  # probes answer without credentials
CHALLENGE = 'Basic realm="kcoord", charset="UTF-8"'
_REMEMBERED = 256  # passwords that matched, kept by a keyed hash


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) of an `Authorization: Basic <base64(user:password)>` header (RFC 7617), else None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        text = base64.b64decode(token.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, colon, password = text.partition(":")
    return (user, password) if colon else None


class BasicAuth:
    """The Basic check of `http.auth=basic`, as an aiohttp middleware (`middleware`)."""

    def __init__(self, scram: Callable[[str, str], ScramCredential | None], plain_users: Sequence[Mapping[str, str]],
                 authorizer: Authorizer | None, failed_delay_ms: int) -> None:
        self.scram = scram  # (user, mechanism name) -> the stored credential
        self.plain = [jaas_user_verifier(users) for users in plain_users]
        self.authorizer = authorizer
        self.failed_delay = failed_delay_ms / 1000.0
        self._derive = asyncio.Semaphore(1)  # one PBKDF2 at a time
        self._key = secrets.token_bytes(32)
        self._remembered: OrderedDict[tuple[str, int, bytes], ScramCredential] = OrderedDict()

    async def verify(self, user: str, password: str) -> bool:
        if any(verify(user, password) for verify in self.plain):
            return True
        for mechanism in ScramMechanism:
            credential = self.scram(user, mechanism.mechanism_name)
            if credential is not None and await self._scram_matches(user, password, mechanism, credential):
                return True
        return False

    async def _scram_matches(self, user: str, password: str, mechanism: ScramMechanism,
                             credential: ScramCredential) -> bool:
        key = (user, mechanism.type, hmac.digest(self._key, password.encode(), "sha256"))
        if self._remembered.get(key) is credential:  # the same password against the same, unchanged credential
            self._remembered.move_to_end(key)
            return True
        async with self._derive:
            derived = await asyncio.to_thread(credential_from_password, mechanism, password, credential.salt,
                                              credential.iterations)
        if not hmac.compare_digest(derived.stored_key, credential.stored_key):
            return False
        self._remembered[key] = credential
        if len(self._remembered) > _REMEMBERED:
            self._remembered.popitem(last=False)
        return True

    def authorized(self, user: str, host: str) -> bool:
        authorizer = self.authorizer
        return authorizer is None or authorizer.authorize(f"User:{user}", host, AclOperation.DESCRIBE,
                                                          ResourceType.CLUSTER, CLUSTER_NAME)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await handler(request)
        credentials = basic_credentials(request.headers.get("Authorization"))
        if credentials is None:  # a browser's first request carries none: asked at once
            return _refusal(401, "authentication required")
        user, password = credentials
        peer = request.remote or "?"
        if not await self.verify(user, password):
            log.warning("http authentication failed", peer=peer, user=user)
            await asyncio.sleep(self.failed_delay)
            return _refusal(401, "authentication failed")
        if not self.authorized(user, peer):
            log.warning("http authorization failed", peer=peer, principal=f"User:{user}",
                        reason="DESCRIBE on the cluster is needed to read the operations endpoint")
            return _refusal(403, f"User:{user} may not DESCRIBE the cluster")
        return await handler(request)


def _refusal(status: int, text: str) -> web.Response:
    headers = {"WWW-Authenticate": CHALLENGE} if status == 401 else None
    return web.json_response({"error": text}, status=status, headers=headers)


def only_loopback(host: str) -> bool:
    """Whether `host` (a listener's host: empty is every interface) names loopback addresses only."""
    if not host:
        return False
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def http_exposure(auth: str, authorizer_on: bool, host: str) -> None:
    """The start-up warning of an endpoint open to the network while the Kafka listeners ask for ACLs."""
    if auth == "NONE" and authorizer_on and not only_loopback(host):
        log.warning("http listener is open", host=host or "(every interface)",
                    reason="an authorizer is on, but http.listener serves groups, topics, offsets and lag to anyone "
                           "who reaches it: set http.auth=basic, or bind it to loopback")
