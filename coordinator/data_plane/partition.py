"""One hosted topic partition: its log, its idempotent-producer state, its effective topic config and
its leader epoch (0 in local mode; the ownership epoch in cluster mode, as Metadata reports it)."""

from __future__ import annotations

from coordinator.data_plane.producer_state import ProducerStateTable
from coordinator.data_plane.topic_configs import EffectiveConfig
from storage.log import PartitionLog


class Partition:
    __slots__ = ("topic", "index", "key", "log", "producers", "config", "leader_epoch")

    def __init__(self, topic: str, index: int, log_: PartitionLog, config: EffectiveConfig,
                 leader_epoch: int = 0) -> None:
        self.topic, self.index, self.key = topic, index, (topic, index)
        self.log = log_
        self.producers = ProducerStateTable()
        self.config = config
        self.leader_epoch = leader_epoch
