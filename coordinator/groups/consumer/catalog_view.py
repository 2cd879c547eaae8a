"""The topic catalog as consumer groups see it (subscriptions.TopicView): user topics only, by name and id."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from coordinator.groups.consumer.model import TopicMetadata


class CatalogTopics:
    """Over the data plane's TopicCatalog (duck-typed: `get`, `by_id`, `all`, `version`); a topic's
    TopicMetadata is made once per TopicInfo."""

    def __init__(self, catalog: Any) -> None:
        self.catalog = catalog
        self._made: dict[str, tuple[Any, TopicMetadata]] = {}

    @property
    def version(self) -> int:
        return int(self.catalog.version)

    def topic(self, name: str) -> TopicMetadata | None:
        info = self.catalog.get(name)
        if info is None or info.internal:
            return None
        made = self._made.get(name)
        if made is not None and made[0] is info:
            return made[1]
        metadata = TopicMetadata(info.topic_id, info.name, info.partitions)
        self._made[name] = (info, metadata)
        return metadata

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        info = self.catalog.by_id(topic_id)
        return None if info is None else info.name

    def names(self) -> Iterable[str]:
        return [t.name for t in self.catalog.all() if not t.internal]
