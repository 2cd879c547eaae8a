"""SCRAM credentials: what AlterUserScramCredentials stores and what SCRAM authentication reads.

Stored is what Kafka's UserScramCredentialRecord holds — salt, StoredKey, ServerKey, iterations per (user,
mechanism) — never a password: the client sends a salted password and the server derives the two keys from it
(ScramFormatter.storedKey / serverKey), then forgets it. The store is a JSON file under log.dirs (local mode,
rewritten atomically, mode 0600) or PostgreSQL's kc_scram_credentials (cluster mode: every node reads it again
when another has changed it). A change is written first and applied to memory after, so what a node
authenticates with is always what survives its restart. The validation is Kafka's ScramControlManager's.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from coordinator.data_plane.file_catalog_store import write_atomically

# Kafka's org.apache.kafka.clients.admin.ScramMechanism types and its hash per mechanism
MECHANISMS: dict[int, tuple[str, str]] = {1: ("SCRAM-SHA-256", "sha256"), 2: ("SCRAM-SHA-512", "sha512")}
MECHANISM_TYPES = {name: mechanism_type for mechanism_type, (name, _hash) in MECHANISMS.items()}
MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations (both mechanisms)
MAX_ITERATIONS = 16384  # ScramControlManager.MAX_ITERATIONS

Key = tuple[str, int]  # (user, mechanism type)


@dataclass(frozen=True)
class StoredCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"StoredCredential(iterations={self.iterations}, keys=[hidden])"

    def to_json(self) -> dict[str, Any]:
        return {"salt": _b64(self.salt), "stored_key": _b64(self.stored_key), "server_key": _b64(self.server_key),
                "iterations": self.iterations}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> StoredCredential:
        return cls(base64.b64decode(value["salt"]), base64.b64decode(value["stored_key"]),
                   base64.b64decode(value["server_key"]), int(value["iterations"]))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def from_salted_password(mechanism_type: int, salt: bytes, salted_password: bytes,
                         iterations: int) -> StoredCredential:
    """ScramFormatter: StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword,
    "Server Key") (RFC 5802)."""
    digest = MECHANISMS[mechanism_type][1]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    return StoredCredential(salt, hashlib.new(digest, client_key).digest(),
                            hmac.new(salted_password, b"Server Key", digest).digest(), iterations)


class CredentialStore(Protocol):
    def preload(self) -> dict[Key, StoredCredential]: ...
    async def read(self) -> dict[Key, StoredCredential]: ...
    async def write(self, upserts: dict[Key, StoredCredential], deletes: Iterable[Key]) -> None: ...


class FileCredentialStore:
    """Local mode: `<log.dirs>/scram-credentials.json`, readable by this process's user only."""

    FILE = "scram-credentials.json"

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, self.FILE)
        self._credentials: dict[Key, StoredCredential] = {}

    def preload(self) -> dict[Key, StoredCredential]:
        if os.path.exists(self.path):
            with open(self.path, "rb") as handle:
                stored = json.loads(handle.read())
            self._credentials = {(row["user"], int(row["mechanism"])): StoredCredential.from_json(row)
                                 for row in stored["credentials"]}
        return dict(self._credentials)

    async def read(self) -> dict[Key, StoredCredential]:
        return dict(self._credentials)

    async def write(self, upserts: dict[Key, StoredCredential], deletes: Iterable[Key]) -> None:
        credentials = {**self._credentials, **upserts}
        for key in deletes:
            credentials.pop(key, None)
        rows = [{"user": user, "mechanism": mechanism, **value.to_json()}
                for (user, mechanism), value in sorted(credentials.items())]
        body = json.dumps({"version": 1, "credentials": rows}, indent=1).encode()
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        await asyncio.get_running_loop().run_in_executor(None, _write_private, self.path, body)
        self._credentials = credentials


def _write_private(path: str, body: bytes) -> None:
    write_atomically(path, body)
    os.chmod(path, 0o600)


@dataclass(frozen=True)
class Upsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class ScramCredentials:
    """The credentials a node authenticates with, and their changes (AlterUserScramCredentials)."""

    def __init__(self, store: CredentialStore) -> None:
        self.store = store
        self.credentials = store.preload()
        self._lock = asyncio.Lock()

    def lookup(self, user: str, mechanism: str) -> StoredCredential | None:
        mechanism_type = MECHANISM_TYPES.get(mechanism)
        return None if mechanism_type is None else self.credentials.get((user, mechanism_type))

    def of_user(self, user: str) -> list[tuple[int, int]]:
        """(mechanism type, iterations) of every credential of `user` (DescribeUserScramCredentials)."""
        return sorted((mechanism, value.iterations) for (name, mechanism), value in self.credentials.items()
                      if name == user)

    def users(self) -> list[str]:
        return sorted({user for user, _mechanism in self.credentials})

    async def refresh(self) -> None:
        """Cluster mode: read them again (another node may have changed them)."""
        self.credentials = await self.store.read()

    async def alter(self, deletions: Sequence[tuple[str, int]],
                    upsertions: Sequence[Upsertion]) -> list[tuple[str, ErrorCode, str | None]]:
        """ScramControlManager.alterCredentials: per user (NONE | the error, its message); all valid changes
        are written together, then applied."""
        async with self._lock:
            deletes, upserts, errors = self._validate(deletions, upsertions)
            records = {(u.user, u.mechanism): from_salted_password(u.mechanism, u.salt, u.salted_password,
                                                                   u.iterations) for u in upserts.values()}
            keys = [(user, mechanism) for user, mechanism in deletes.values()]
            if records or keys:
                await self.store.write(records, keys)
                credentials = {**self.credentials, **records}
                for key in keys:
                    credentials.pop(key, None)
                self.credentials = credentials
        results: list[tuple[str, ErrorCode, str | None]] = [(user, ErrorCode.none, None) for user in deletes]
        results += [(user, ErrorCode.none, None) for user in upserts]
        results += [(user, code, message) for user, (code, message) in errors.items()]
        return results

    def _validate(self, deletions: Sequence[tuple[str, int]], upsertions: Sequence[Upsertion]) -> tuple[
            dict[str, tuple[str, int]], dict[str, Upsertion], dict[str, tuple[ErrorCode, str]]]:
        deletes: dict[str, tuple[str, int]] = {}
        upserts: dict[str, Upsertion] = {}
        errors: dict[str, tuple[ErrorCode, str]] = {}
        twice = (ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request")
        for user, mechanism in deletions:
            if user in errors:
                continue
            if deletes.pop(user, None) is not None:
                errors[user] = twice
                continue
            error = _user_and_mechanism_error(user, mechanism)
            if error is None and (user, mechanism) not in self.credentials:
                error = (ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
            if error is None:
                deletes[user] = (user, mechanism)
            else:
                errors[user] = error
        for upsertion in upsertions:
            user = upsertion.user
            if user in errors:
                continue
            if deletes.pop(user, None) is not None or upserts.pop(user, None) is not None:
                errors[user] = twice
                continue
            error = _user_and_mechanism_error(user, upsertion.mechanism)
            if error is None and upsertion.iterations < MIN_ITERATIONS:
                error = (ErrorCode.unacceptable_credential, "Too few iterations")
            elif error is None and upsertion.iterations > MAX_ITERATIONS:
                error = (ErrorCode.unacceptable_credential, "Too many iterations")
            if error is None:
                upserts[user] = upsertion
            else:
                errors[user] = error
        return deletes, upserts, errors


def _user_and_mechanism_error(user: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not user:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


class PgCredentialStore:
    """Cluster mode: kc_scram_credentials (storage/pg/scram_credentials.py); read at start and again at every
    membership refresh (a NOTIFY 'scram_credentials' wakes it)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def preload(self) -> dict[Key, StoredCredential]:
        return {}

    async def read(self) -> dict[Key, StoredCredential]:
        from storage.pg.scram_credentials import read_credentials

        return {(user, mechanism): StoredCredential(salt, stored_key, server_key, iterations)
                for user, mechanism, salt, stored_key, server_key, iterations in await read_credentials(self.pool)}

    async def write(self, upserts: dict[Key, StoredCredential], deletes: Iterable[Key]) -> None:
        from storage.pg.scram_credentials import write_credentials

        await write_credentials(self.pool, [(user, mechanism, v.salt, v.stored_key, v.server_key, v.iterations)
                                            for (user, mechanism), v in upserts.items()], deletes)
