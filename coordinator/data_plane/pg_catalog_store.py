"""Cluster mode's catalog store: the topics in PostgreSQL (kc_topics, storage/pg/catalog.py),
shared by every node.

Nothing can be read without awaiting, so `preload` is empty: the catalog is filled by
`await catalog.refresh()` before the data plane starts, and again whenever a node NOTIFYs
'topics' (the membership loop) so that topics created or deleted elsewhere show here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import asyncpg

from coordinator.data_plane.topic_catalog import TopicInfo
from rules.placement import OFFSETS_TOPIC
from storage.pg import broker_configs, catalog as sql


def topic_row(topic: TopicInfo) -> sql.TopicRow:
    return sql.TopicRow(topic.name, topic.topic_id, topic.partitions, topic.config_map(), topic.internal,
                        topic.replication_factor)


def topic_info(row: sql.TopicRow) -> TopicInfo:
    return TopicInfo(row.name, row.topic_id, row.partitions, row.internal, tuple(sorted(row.configs.items())),
                     row.replication_factor)


class PgCatalogStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    def preload(self) -> list[TopicInfo]:
        return []

    async def read(self) -> list[TopicInfo]:
        """The user topics and `__transaction_state` once created (the catalog holds `__consumer_offsets` itself)."""
        return [topic_info(row) for row in await sql.read_topics(self.pool) if row.name != OFFSETS_TOPIC]

    async def write(self, visible: Sequence[TopicInfo], added: Sequence[TopicInfo],
                    removed: Sequence[TopicInfo]) -> list[TopicInfo]:
        stored = await sql.apply_changes(self.pool, [topic_row(t) for t in added], [t.topic_id for t in removed])
        return [topic_info(row) for row in stored]

    async def grow(self, visible: Sequence[TopicInfo], old: TopicInfo, new: TopicInfo) -> bool:
        return await sql.grow_topic(self.pool, old.topic_id, old.partitions, new.partitions)

    async def update_configs(self, visible: Sequence[TopicInfo], topic: TopicInfo) -> bool:
        return await sql.update_configs(self.pool, topic.topic_id, topic.config_map())


class PgDynamicConfigStore:
    """Cluster mode's dynamic broker configs (kc_broker_configs): `refresh` fills them before the data
    plane starts, and again at every membership refresh (a NOTIFY 'broker_configs' wakes it)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    def preload(self) -> dict[str, dict[str, str]]:
        return {}

    async def read(self) -> dict[str, dict[str, str]]:
        return await broker_configs.read_levels(self.pool)

    async def write(self, level: str, configs: Mapping[str, str]) -> None:
        await broker_configs.write_level(self.pool, level, configs)
