"""SCRAM credentials: what AlterUserScramCredentials stores and what SCRAM authentication reads.

Stored is what Kafka's UserScramCredentialRecord holds — salt, StoredKey, ServerKey, iterations per (user,
mechanism) — never a password: the client sends a salted password and the server derives the two keys from it
(ScramFormatter.storedKey / serverKey), then forgets it. The store is a JSON file under log.dirs (local mode,
rewritten atomically, mode 0600) or PostgreSQL's kc_scram_credentials (cluster mode: every node reads it again
when another has changed it). A change is written first and applied to memory after, so what a node
authenticates with is always what survives its restart. What a change may do is credentials.py's (Kafka's
ScramControlManager), the keys are scram.py's.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from coordinator.data_plane.file_catalog_store import write_atomically
from coordinator.security.credentials import Deletion, Upsertion, UserScramCredential, plan_alteration
from coordinator.security.scram import ScramCredential, ScramMechanism

Key = tuple[str, int]  # (user, mechanism type)


class CredentialStore(Protocol):
    def preload(self) -> dict[Key, ScramCredential]: ...
    async def read(self) -> dict[Key, ScramCredential]: ...
    async def write(self, upserts: dict[Key, ScramCredential], deletes: Iterable[Key]) -> None: ...


class FileCredentialStore:
    """Local mode: `<log.dirs>/scram-credentials.json`, readable by this process's user only."""

    FILE = "scram-credentials.json"

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, self.FILE)
        self._credentials: dict[Key, ScramCredential] = {}

    def preload(self) -> dict[Key, ScramCredential]:
        if os.path.exists(self.path):
            with open(self.path, "rb") as handle:
                stored = json.loads(handle.read())
            try:
                rows = [UserScramCredential.from_json(row) for row in stored["credentials"]]
            except ValueError as exc:
                raise ValueError(f"{self.path}: a credential is unreadable: {exc}") from None
            self._credentials = {(row.user, row.mechanism.type): row.credential for row in rows}
        return dict(self._credentials)

    async def read(self) -> dict[Key, ScramCredential]:
        return dict(self._credentials)

    async def write(self, upserts: dict[Key, ScramCredential], deletes: Iterable[Key]) -> None:
        credentials = {**self._credentials, **upserts}
        for key in deletes:
            credentials.pop(key, None)
        rows = [UserScramCredential(user, ScramMechanism(mechanism), value).to_json()
                for (user, mechanism), value in sorted(credentials.items())]
        body = json.dumps({"version": 1, "credentials": rows}, indent=1).encode()
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        await asyncio.get_running_loop().run_in_executor(None, _write_private, self.path, body)
        self._credentials = credentials


def _write_private(path: str, body: bytes) -> None:
    write_atomically(path, body)
    os.chmod(path, 0o600)


class ScramCredentials:
    """The credentials a node authenticates with, and their changes (AlterUserScramCredentials)."""

    def __init__(self, store: CredentialStore) -> None:
        self.store = store
        self.credentials = store.preload()
        self._lock = asyncio.Lock()

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        scram = ScramMechanism.from_name(mechanism)
        return None if scram is None else self.credentials.get((user, scram.type))

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
            plan = plan_alteration([Deletion(*deletion) for deletion in deletions], upsertions,
                                   lambda user, mechanism: (user, mechanism.type) in self.credentials)
            records = {(user, row.mechanism.type): row.credential for user, row in plan.upsertions.items()}
            keys = [(user, mechanism.type) for user, mechanism in plan.deletions.items()]
            if records or keys:
                await self.store.write(records, keys)
                credentials = {**self.credentials, **records}
                for key in keys:
                    credentials.pop(key, None)
                self.credentials = credentials
        return plan.results()


class PgCredentialStore:
    """Cluster mode: kc_scram_credentials (storage/pg/scram_credentials.py); read at start and again at every
    membership refresh (a NOTIFY 'scram_credentials' wakes it)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def preload(self) -> dict[Key, ScramCredential]:
        return {}

    async def read(self) -> dict[Key, ScramCredential]:
        from storage.pg.scram_credentials import read_credentials

        return {(user, mechanism): ScramCredential(salt, stored_key, server_key, iterations)
                for user, mechanism, salt, stored_key, server_key, iterations in await read_credentials(self.pool)}

    async def write(self, upserts: dict[Key, ScramCredential], deletes: Iterable[Key]) -> None:
        from storage.pg.scram_credentials import write_credentials

        await write_credentials(self.pool, [(user, mechanism, v.salt, v.stored_key, v.server_key, v.iterations)
                                            for (user, mechanism), v in upserts.items()], deletes)
