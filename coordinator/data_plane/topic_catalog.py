"""The topic catalog: what Metadata lists and FindCoordinator's internal topic.

It starts with the internal `__consumer_offsets` topic; the embedded data plane adds
user topics. Topic ids are stable for a cluster: the internal topic's id is derived
from the cluster id, so it survives restarts without extra state. User topics (name,
random id, partition count, config overrides) are kept in
`<log.dirs>/topic-catalog.json` when the catalog is given a `log_dir`; a batch of changes
rewrites that file atomically (temp file, fsync, rename, fsync of the directory) in a
worker thread, so a crash leaves either the old or the new catalog, never a torn one,
and the event loop never waits for the disk.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from storage.placement import OFFSETS_TOPIC

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

    def config_map(self) -> dict[str, str]:
        return dict(self.configs)


CATALOG_FILE = "topic-catalog.json"


def write_atomically(path: str, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new content."""
    directory = os.path.dirname(path) or "."
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def collision_key(name: str) -> str:
    """Names equal under this key collide (Kafka: '.' and '_' clash in metric names)."""
    return name.replace(".", "_")


class TopicCatalog:
    """Changes are batched and written off the event loop: `reserve` a new topic (its name is
    then taken, not yet visible), `commit` any number of them at once with one catalog write +
    fsync in a worker thread; they become visible once durable. `drop` forgets a topic at once
    (its deletion is visible at once); the next `commit` makes that durable."""

    def __init__(self, cluster_id: str, offsets_partitions: int, log_dir: str | None = None) -> None:
        namespace = uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-cluster:{cluster_id}")
        offsets = TopicInfo(OFFSETS_TOPIC, uuid.uuid5(namespace, OFFSETS_TOPIC), offsets_partitions, internal=True)
        self._by_name: dict[str, TopicInfo] = {offsets.name: offsets}
        self._by_id: dict[uuid.UUID, TopicInfo] = {offsets.topic_id: offsets}
        self._keys: dict[str, str] = {collision_key(offsets.name): offsets.name}  # visible and reserved names
        self._reserved: set[str] = set()
        self._write_lock = asyncio.Lock()
        self._path = os.path.join(log_dir, CATALOG_FILE) if log_dir else None
        if self._path and os.path.exists(self._path):
            self._load(self._path)

    def _load(self, path: str) -> None:
        with open(path, "rb") as handle:
            stored = json.loads(handle.read())
        for item in stored["topics"]:
            self._show(TopicInfo(item["name"], uuid.UUID(item["topic_id"]), int(item["partitions"]),
                                 configs=tuple(sorted(item.get("configs", {}).items()))))

    def _show(self, topic: TopicInfo) -> None:
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self._keys[collision_key(topic.name)] = topic.name

    @staticmethod
    def _write(path: str, topics: list[TopicInfo]) -> None:
        body = {"version": 1, "topics": [
            {"name": t.name, "topic_id": str(t.topic_id), "partitions": t.partitions, "configs": dict(t.configs)}
            for t in topics if not t.internal]}
        write_atomically(path, json.dumps(body, indent=1, sort_keys=True).encode())

    def colliding(self, name: str) -> str | None:
        """A different existing (or reserved) topic name that equals `name` once '.' is read
        as '_' (Kafka refuses such pairs: their metric names would clash)."""
        other = self._keys.get(collision_key(name))
        return other if other is not None and other != name else None

    def taken(self, name: str) -> bool:
        """A visible topic, or one being created."""
        return name in self._by_name or name in self._reserved

    def reserve(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> TopicInfo:
        """A new user topic with a fresh random id; its name is taken until `commit` or `release`."""
        if self.taken(name):
            raise ValueError(f"topic {name} exists")
        topic_id = uuid.uuid4()
        while topic_id in self._by_id or topic_id.int == 0:
            topic_id = uuid.uuid4()
        self._reserved.add(name)
        self._keys.setdefault(collision_key(name), name)
        return TopicInfo(name, topic_id, partitions, configs=tuple(sorted((configs or {}).items())))

    def release(self, names: list[str]) -> None:
        """Free reserved names that were not committed."""
        for name in names:
            if name in self._reserved:
                self._reserved.discard(name)
                key = collision_key(name)
                if self._keys.get(key) == name and name not in self._by_name:
                    del self._keys[key]

    async def commit(self, added: Sequence[TopicInfo] = ()) -> None:
        """Write the visible topics plus `added` (reserved) in one catalog write off the loop;
        then `added` become visible. Writes are serialized: the file never goes back in time."""
        async with self._write_lock:
            if self._path is not None:
                snapshot = [*self._by_name.values(), *added]
                await asyncio.get_running_loop().run_in_executor(None, self._write, self._path, snapshot)
            for topic in added:
                self._reserved.discard(topic.name)
                self._show(topic)

    def drop(self, name: str) -> TopicInfo:
        """Forget a user topic now (Metadata stops listing it); durable after the next `commit`."""
        topic = self._by_name[name]
        if topic.internal:
            raise ValueError(f"{name} is internal")
        del self._by_name[name]
        del self._by_id[topic.topic_id]
        key = collision_key(name)
        if self._keys.get(key) == name and name not in self._reserved:
            del self._keys[key]
        return topic

    def get(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[TopicInfo]:
        return list(self._by_name.values())
