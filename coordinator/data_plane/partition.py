"""One hosted topic partition: its log, its idempotent-producer state and its effective topic config."""

from __future__ import annotations

from coordinator.data_plane.producer_state import ProducerStateTable
from coordinator.data_plane.topic_configs import EffectiveConfig
from storage.log import PartitionLog


class Partition:
    __slots__ = ("topic", "index", "key", "log", "producers", "config")

    def __init__(self, topic: str, index: int, log_: PartitionLog, config: EffectiveConfig) -> None:
        self.topic, self.index, self.key = topic, index, (topic, index)
        self.log = log_
        self.producers = ProducerStateTable()
        self.config = config
