"""The ACLs, stored and served: CreateAcls and DeleteAcls write the store first and change the authorizer after,
so what a node enforces is what survives its restart. The store is `<log.dirs>/acls.json` (local mode,
rewritten atomically) or PostgreSQL's kc_acls (cluster mode: every node reads them again when one changes them,
a NOTIFY wakes it)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from coordinator.data_plane.file_catalog_store import write_atomically
from coordinator.security.acl_model import AclBinding, AclError, AclFilter, validate_new
from coordinator.security.authorizer import Authorizer


class AclStore(Protocol):
    def preload(self) -> set[AclBinding]: ...
    async def read(self) -> set[AclBinding]: ...
    async def write(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None: ...


class FileAclStore:
    FILE = "acls.json"

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, self.FILE)
        self._acls: set[AclBinding] = set()

    def preload(self) -> set[AclBinding]:
        if os.path.exists(self.path):
            with open(self.path, "rb") as handle:
                self._acls = {AclBinding.from_json(row) for row in json.loads(handle.read())["acls"]}
        return set(self._acls)

    async def read(self) -> set[AclBinding]:
        return set(self._acls)

    async def write(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None:
        acls = (self._acls | set(added)) - set(removed)
        rows = sorted((acl.to_json() for acl in acls), key=lambda row: json.dumps(row, sort_keys=True))
        body = json.dumps({"version": 1, "acls": rows}, indent=1).encode()
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        await asyncio.get_running_loop().run_in_executor(None, write_atomically, self.path, body)
        self._acls = acls


class PgAclStore:
    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def preload(self) -> set[AclBinding]:
        return set()

    async def read(self) -> set[AclBinding]:
        from storage.pg.acls import read_acls

        return {AclBinding.from_json(row) for row in await read_acls(self.pool)}

    async def write(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None:
        from storage.pg.acls import write_acls

        await write_acls(self.pool, [acl.to_json() for acl in added], [acl.to_json() for acl in removed])


class Acls:
    """The stored ACLs and the authorizer that enforces them."""

    def __init__(self, store: AclStore, authorizer: Authorizer) -> None:
        self.store = store
        self.authorizer = authorizer
        authorizer.replace(store.preload())
        self._lock = asyncio.Lock()

    async def refresh(self) -> None:
        self.authorizer.replace(await self.store.read())

    async def create(self, bindings: Sequence[AclBinding]) -> list[tuple[ErrorCode, str | None]]:
        """CreateAcls: per binding NONE or Kafka's refusal; the valid ones stored together."""
        results: list[tuple[ErrorCode, str | None]] = []
        valid = []
        for acl in bindings:
            try:
                validate_new(acl)
            except AclError as exc:
                results.append((exc.code, str(exc)))
                continue
            valid.append(acl)
            results.append((ErrorCode.none, None))
        async with self._lock:
            existing = self.authorizer.acls()
            new = [acl for acl in dict.fromkeys(valid) if acl not in existing]
            if new:
                await self.store.write(new, ())
                self.authorizer.add(new)
        return results

    async def delete(self, filters: Sequence[AclFilter]) -> list[tuple[ErrorCode, str | None, list[AclBinding]]]:
        """DeleteAcls: per filter (NONE | its refusal, the ACLs it removed)."""
        async with self._lock:
            results: list[tuple[ErrorCode, str | None, list[AclBinding]]] = []
            removed: dict[AclBinding, None] = {}
            for acl_filter in filters:
                try:
                    acl_filter.validate()
                except AclError as exc:
                    results.append((exc.code, str(exc), []))
                    continue
                matching = self.authorizer.describe(acl_filter)
                removed.update(dict.fromkeys(matching))
                results.append((ErrorCode.none, None, matching))
            if removed:
                await self.store.write((), removed)
                self.authorizer.remove(removed)
        return results
