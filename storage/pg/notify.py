"""The one NOTIFY channel of the cluster: nodes LISTEN on it and refresh what the payload names."""

from __future__ import annotations

from typing import Any, Literal, Protocol

CHANNEL = "kc_cluster"
# What changed: kc_nodes (register, deregister), kc_partitions (owners, new rows), kc_topics, kc_broker_configs,
# kc_scram_credentials, kc_acls, kc_group_configs.
Change = Literal["nodes", "partitions", "topics", "broker_configs", "scram_credentials", "acls", "group_configs"]


class Executor(Protocol):
    """What the SQL functions of storage/pg/ run on: an asyncpg Pool, or a Connection (inside a transaction)."""

    async def execute(self, query: str, *args: Any) -> str: ...
    async def fetch(self, query: str, *args: Any) -> list[Any]: ...
    async def fetchrow(self, query: str, *args: Any) -> Any: ...
    async def fetchval(self, query: str, *args: Any) -> Any: ...


async def notify(executor: Executor, change: Change) -> None:
    """NOTIFY kc_cluster, `change` (inside a transaction: delivered at its commit, not at all on rollback)."""
    await executor.execute("SELECT pg_notify($1, $2)", CHANNEL, change)
