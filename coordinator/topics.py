"""The topic catalog: what Metadata lists and FindCoordinator's internal topic.

It starts with the internal `__consumer_offsets` topic; the embedded data plane adds
user topics. Topic ids are stable for a cluster: the internal topic's id is derived
from the cluster id, so it survives restarts without extra state.
"""

from __future__ import annotations

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


class TopicCatalog:
    def __init__(self, cluster_id: str, offsets_partitions: int) -> None:
        namespace = uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-cluster:{cluster_id}")
        offsets = TopicInfo(OFFSETS_TOPIC, uuid.uuid5(namespace, OFFSETS_TOPIC), offsets_partitions, internal=True)
        self._by_name: dict[str, TopicInfo] = {offsets.name: offsets}
        self._by_id: dict[uuid.UUID, TopicInfo] = {offsets.topic_id: offsets}

    def get(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[TopicInfo]:
        return list(self._by_name.values())
