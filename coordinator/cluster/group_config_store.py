"""Cluster mode's group configs (kc_group_configs, storage/pg/group_configs.py): the store the share runtime's
GroupConfigs uses on a node of a cluster (coordinator/share/runtime/group_configs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.pg import group_configs


class PgGroupConfigStore:
    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def read(self) -> dict[str, dict[str, str]]:
        return await group_configs.read_all(self.pool)

    async def write(self, group_id: str, configs: Mapping[str, str], every: Mapping[str, Mapping[str, str]]
                    ) -> None:
        await group_configs.write_group(self.pool, group_id, configs)
