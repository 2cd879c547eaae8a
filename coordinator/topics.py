"""The topic catalog: what Metadata lists and FindCoordinator's internal topic.

It starts with the internal `__consumer_offsets` topic; the embedded data plane adds
user topics. Topic ids are stable for a cluster: the internal topic's id is derived
from the cluster id, so it survives restarts without extra state. User topics (name,
random id, partition count, config overrides) are kept in
`<log.dirs>/topic-catalog.json` when the catalog is given a `log_dir`; every change
rewrites that file atomically (temp file, fsync, rename, fsync of the directory), so
a crash leaves either the old or the new catalog, never a torn one.
"""

from __future__ import annotations

import json
import os
import re
import uuid
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


class TopicCatalog:
    def __init__(self, cluster_id: str, offsets_partitions: int, log_dir: str | None = None) -> None:
        namespace = uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-cluster:{cluster_id}")
        offsets = TopicInfo(OFFSETS_TOPIC, uuid.uuid5(namespace, OFFSETS_TOPIC), offsets_partitions, internal=True)
        self._by_name: dict[str, TopicInfo] = {offsets.name: offsets}
        self._by_id: dict[uuid.UUID, TopicInfo] = {offsets.topic_id: offsets}
        self._path = os.path.join(log_dir, CATALOG_FILE) if log_dir else None
        if self._path and os.path.exists(self._path):
            self._load(self._path)

    def _load(self, path: str) -> None:
        with open(path, "rb") as handle:
            stored = json.loads(handle.read())
        for item in stored["topics"]:
            topic = TopicInfo(item["name"], uuid.UUID(item["topic_id"]), int(item["partitions"]),
                              configs=tuple(sorted(item.get("configs", {}).items())))
            self._by_name[topic.name] = topic
            self._by_id[topic.topic_id] = topic

    def _persist(self, topics: list[TopicInfo]) -> None:
        if self._path is None:
            return
        body = {"version": 1, "topics": [
            {"name": t.name, "topic_id": str(t.topic_id), "partitions": t.partitions, "configs": dict(t.configs)}
            for t in topics if not t.internal]}
        write_atomically(self._path, json.dumps(body, indent=1, sort_keys=True).encode())

    def colliding(self, name: str) -> TopicInfo | None:
        """A different existing topic whose name equals `name` once '.' is read as '_'
        (Kafka refuses such pairs: their metric names would clash)."""
        key = name.replace(".", "_")
        for topic in self._by_name.values():
            if topic.name != name and topic.name.replace(".", "_") == key:
                return topic
        return None

    def add(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> TopicInfo:
        """Create a user topic with a fresh random id; durable before it is visible."""
        if name in self._by_name:
            raise ValueError(f"topic {name} exists")
        topic_id = uuid.uuid4()
        while topic_id in self._by_id or topic_id.int == 0:
            topic_id = uuid.uuid4()
        topic = TopicInfo(name, topic_id, partitions, configs=tuple(sorted((configs or {}).items())))
        self._persist([*self._by_name.values(), topic])
        self._by_name[name] = topic
        self._by_id[topic_id] = topic
        return topic

    def remove(self, name: str) -> TopicInfo:
        """Forget a user topic; durable before it disappears from Metadata."""
        topic = self._by_name[name]
        if topic.internal:
            raise ValueError(f"{name} is internal")
        self._persist([t for t in self._by_name.values() if t.name != name])
        del self._by_name[name]
        del self._by_id[topic.topic_id]
        return topic

    def get(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[TopicInfo]:
        return list(self._by_name.values())
