"""What handlers are given: the settings, this node, and the domain objects."""

from __future__ import annotations

from dataclasses import dataclass

from .cluster import Node
from .config import Config
from .topics import TopicCatalog


@dataclass
class Services:
    config: Config
    node: Node
    topics: TopicCatalog
