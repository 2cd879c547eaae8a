"""The topic catalog: what Metadata lists and FindCoordinator's internal topic.

It starts with the internal `__consumer_offsets` topic; the embedded data plane adds
user topics. Topic ids are stable for a cluster: the internal topic's id is derived
from the cluster id, so it survives restarts without extra state. User topics (name,
random id, partition count, config overrides) are kept by a `CatalogStore`: in local
mode `<log.dirs>/topic-catalog.json` (file_catalog_store.py), in cluster mode PostgreSQL's
kc_topics (pg_catalog_store.py). Reads are served from memory; a batch of changes is one
store write, awaited off the event loop, and new topics become visible once it is durable.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from coordinator.errors import InvalidPartitions
from rules.placement import OFFSETS_TOPIC, offsets_topic_id

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249


def topic_name_error(name: str) -> str | None:
    """Why `name` is not a legal topic name (Kafka's Topic.validate), or None."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return "topic name cannot be '.' or '..'"
    if len(name) > MAX_NAME_LENGTH:
        return f"topic name is longer than {MAX_NAME_LENGTH} characters"
    if not _LEGAL.match(name):
        return "topic name has characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    internal: bool = False
    configs: tuple[tuple[str, str], ...] = ()  # topic-level overrides, sorted by name
    replication_factor: int = 1  # as created (data_plane/replication.py: the replicas Metadata names)

    def config_map(self) -> dict[str, str]:
        return dict(self.configs)

    def with_configs(self, configs: dict[str, str]) -> TopicInfo:
        return replace(self, configs=tuple(sorted(configs.items())))

    def same_topic(self, other: TopicInfo | None) -> bool:
        """The same topic, whatever its configs (a config change keeps its partitions hosted)."""
        return other is not None and replace(other, configs=self.configs) == self


def collision_key(name: str) -> str:
    """Names equal under this key collide (Kafka: '.' and '_' clash in metric names)."""
    return name.replace(".", "_")


class CatalogStore(Protocol):
    """Where the user topics are kept. `write` gets every topic now visible plus the changes
    (a file store rewrites the whole list, a database applies the changes) and returns, for
    each added topic, the topic now stored under its name: the added one, or the one another
    node created first (same name, another id)."""

    def preload(self) -> list[TopicInfo]:
        """The stored user topics that can be read at construction (without awaiting)."""
        ...

    async def read(self) -> list[TopicInfo]:
        """The stored user topics now."""
        ...

    async def write(self, visible: Sequence[TopicInfo], added: Sequence[TopicInfo],
                    removed: Sequence[TopicInfo]) -> list[TopicInfo]:
        ...

    async def grow(self, visible: Sequence[TopicInfo], old: TopicInfo, new: TopicInfo) -> bool:
        """Store `new` (`old` with more partitions); False when the stored topic is not `old` any more
        (another node changed or deleted it)."""
        ...

    async def update_configs(self, visible: Sequence[TopicInfo], topic: TopicInfo) -> bool:
        """Store `topic`'s configs (`visible` holds it); False if it is no longer stored."""
        ...


class TopicCatalog:
    """Changes are batched and written off the event loop: `reserve` a new topic (its name is
    then taken, not yet visible), `commit` any number of them at once with one store write;
    they become visible once durable. `drop` forgets a topic at once (its deletion is visible
    at once); the next `commit` makes that durable. Without a store nothing is kept.
    `refresh` re-reads the store (cluster mode: topics other nodes created or deleted)."""

    def __init__(self, cluster_id: str, offsets_partitions: int, store: CatalogStore | None = None,
                 offsets_replication_factor: int = 1) -> None:
        offsets = TopicInfo(OFFSETS_TOPIC, offsets_topic_id(cluster_id), offsets_partitions, internal=True,
                            replication_factor=offsets_replication_factor)
        self._offsets = offsets
        self._by_name: dict[str, TopicInfo] = {offsets.name: offsets}
        self._by_id: dict[uuid.UUID, TopicInfo] = {offsets.topic_id: offsets}
        # name -> partition count of every visible topic: what OffsetCommit looks up per topic
        self.partition_counts: dict[str, int] = {offsets.name: offsets.partitions}
        self._keys: dict[str, str] = {collision_key(offsets.name): offsets.name}  # visible and reserved names
        self._reserved: set[str] = set()
        self._dropped: list[TopicInfo] = []  # dropped since the last successful commit
        self._write_lock = asyncio.Lock()
        self._store = store
        #: moves on every change of the visible topics (consumer groups re-resolve their subscriptions)
        self.version = 0
        #: called with a visible topic whose configs changed (the data plane applies them)
        self.on_reconfigured: Callable[[TopicInfo], None] | None = None
        if store is not None:
            for topic in store.preload():
                self._show(topic)

    def _show(self, topic: TopicInfo) -> None:
        self.version += 1
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self.partition_counts[topic.name] = topic.partitions
        self._keys[collision_key(topic.name)] = topic.name

    def colliding(self, name: str) -> str | None:
        """A different existing (or reserved) topic name that equals `name` once '.' is read
        as '_' (Kafka refuses such pairs: their metric names would clash)."""
        other = self._keys.get(collision_key(name))
        return other if other is not None and other != name else None

    def taken(self, name: str) -> bool:
        """A visible topic, or one being created."""
        return name in self._by_name or name in self._reserved

    def reserve(self, name: str, partitions: int, configs: dict[str, str] | None = None,
                replication_factor: int = 1) -> TopicInfo:
        """A new user topic with a fresh random id; its name is taken until `commit` or `release`."""
        if self.taken(name):
            raise ValueError(f"topic {name} exists")
        topic_id = uuid.uuid4()
        while topic_id in self._by_id or topic_id.int == 0:
            topic_id = uuid.uuid4()
        self._reserved.add(name)
        self._keys.setdefault(collision_key(name), name)
        return TopicInfo(name, topic_id, partitions, configs=tuple(sorted((configs or {}).items())),
                         replication_factor=replication_factor)

    def release(self, names: list[str]) -> None:
        """Free reserved names that were not committed."""
        for name in names:
            if name in self._reserved:
                self._reserved.discard(name)
                key = collision_key(name)
                if self._keys.get(key) == name and name not in self._by_name:
                    del self._keys[key]

    async def commit(self, added: Sequence[TopicInfo] = ()) -> set[str]:
        """Store the drops since the last commit plus `added` (reserved) in one write off the
        loop; then `added` become visible. Returns the names of `added` that another node
        created first: the catalog shows that node's topic for them. Writes are serialized:
        the store never goes back in time."""
        async with self._write_lock:
            removed, self._dropped = self._dropped, []
            try:
                if self._store is not None:
                    stored = await self._store.write([*self._by_name.values(), *added], added, removed)
                else:
                    stored = list(added)
            except BaseException:
                self._dropped[:0] = removed  # still to be stored
                raise
            lost: set[str] = set()
            for mine, kept in zip(added, stored):
                self._reserved.discard(mine.name)
                if kept.topic_id != mine.topic_id:
                    lost.add(mine.name)
                self._show(kept)
            return lost

    async def grow(self, old: TopicInfo, new: TopicInfo) -> bool:
        """Store `new`, the visible topic `old` with more partitions (one write, off the loop), then
        show it. False, and nothing shown, when `old` is not the visible topic any more (deleted
        meanwhile). A store that finds its topic changed by another node: InvalidPartitions."""
        async with self._write_lock:
            if self._by_name.get(old.name) != old:
                return False
            if self._store is not None:
                visible = [new if t.name == new.name else t for t in self._by_name.values()]
                if not await self._store.grow(visible, old, new):
                    raise InvalidPartitions(f"The partition count of topic {old.name} was changed by another "
                                            "request; describe it again.")
            if self._by_name.get(old.name) != old:
                return False
            self._show(new)
            return True

    async def refresh(self) -> tuple[list[TopicInfo], list[TopicInfo]]:
        """Make the visible topics what the store holds (but for drops not yet stored);
        returns (topics that appeared, topics that vanished)."""
        if self._store is None:
            return [], []
        async with self._write_lock:
            stored = {t.name: t for t in await self._store.read()}
            for topic in self._dropped:
                if stored.get(topic.name) == topic:
                    del stored[topic.name]
            stored[self._offsets.name] = self._offsets
            vanished = [t for name, t in self._by_name.items() if not t.same_topic(stored.get(name))]
            appeared = [t for name, t in stored.items() if not t.same_topic(self._by_name.get(name))]
            reconfigured = [t for name, t in stored.items()
                            if t.same_topic(self._by_name.get(name)) and self._by_name[name].configs != t.configs]
            self._by_name = stored
            self.version += 1
            self._by_id = {t.topic_id: t for t in stored.values()}
            self.partition_counts.clear()  # the same dict: its readers keep a reference
            self.partition_counts.update((t.name, t.partitions) for t in stored.values())
            self._keys = {collision_key(name): name for name in [*self._reserved, *stored]}
            for topic in reconfigured:  # altered on another node
                self._reconfigured(topic)
            return appeared, vanished

    async def set_configs(self, topic: TopicInfo, configs: dict[str, str]) -> TopicInfo | None:
        """Replace a visible topic's config overrides, durably (one store write off the loop), then
        apply them (`on_reconfigured`). None if the topic was deleted meanwhile."""
        async with self._write_lock:
            if not topic.same_topic(self._by_name.get(topic.name)):
                return None
            new = topic.with_configs(configs)
            if self._store is not None:
                visible = [new if t.name == new.name else t for t in self._by_name.values()]
                if not await self._store.update_configs(visible, new):
                    return None
            if not topic.same_topic(self._by_name.get(topic.name)):  # deleted while the write ran
                return None
            self._show(new)
            self._reconfigured(new)
            return new

    def _reconfigured(self, topic: TopicInfo) -> None:
        if self.on_reconfigured is not None:
            self.on_reconfigured(topic)

    def drop(self, name: str) -> TopicInfo:
        """Forget a user topic now (Metadata stops listing it); durable after the next `commit`."""
        topic = self._by_name[name]
        if topic.internal:
            raise ValueError(f"{name} is internal")
        del self._by_name[name]
        self.version += 1
        del self._by_id[topic.topic_id]
        del self.partition_counts[name]
        key = collision_key(name)
        if self._keys.get(key) == name and name not in self._reserved:
            del self._keys[key]
        self._dropped.append(topic)
        return topic

    def get(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[TopicInfo]:
        return list(self._by_name.values())
