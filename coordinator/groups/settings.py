"""The group.* and offsets.* settings the group coordinator reads, in one small object."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.groups.consumer.assignors import default_assignors
from coordinator.groups.consumer.config_settings import consumer_group_settings
from coordinator.groups.consumer.params import ConsumerGroupSettings
from coordinator.groups.share.config_settings import ShareGroupSettings, share_group_settings

if TYPE_CHECKING:
    from coordinator.config import Config


class GroupSettings:
    """The group.* settings the coordinator reads, in one small object (tests build it directly)."""

    __slots__ = (
        "consumer",
        "initial_rebalance_delay_ms",
        "max_session_timeout_ms",
        "max_size",
        "min_session_timeout_ms",
        "new_member_join_timeout_ms",
        "offset_metadata_max_bytes",
        "offsets_max_batch_bytes",
        "offsets_partitions",
        "offsets_retention_check_interval_ms",
        "offsets_retention_ms",
        "share",
    )

    def __init__(self, min_session_timeout_ms: int = 6000, max_session_timeout_ms: int = 1800000,
                 initial_rebalance_delay_ms: int = 3000, max_size: int = 2**31 - 1,
                 new_member_join_timeout_ms: int = 5 * 60 * 1000, offsets_partitions: int = 50,
                 offset_metadata_max_bytes: int = 4096, offsets_retention_ms: int = 10080 * 60_000,
                 offsets_retention_check_interval_ms: int = 600_000, offsets_max_batch_bytes: int = 1048588,
                 consumer: ConsumerGroupSettings | None = None, share: ShareGroupSettings | None = None) -> None:
        #: group.consumer.* (KIP-848 groups)
        self.consumer = consumer if consumer is not None else ConsumerGroupSettings(assignors=default_assignors())
        self.share = share if share is not None else ShareGroupSettings()  #: group.share.* (KIP-932 groups)
        self.offsets_max_batch_bytes = offsets_max_batch_bytes  # the offsets topic's max.message.bytes
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self.offsets_retention_ms = offsets_retention_ms
        self.offsets_retention_check_interval_ms = offsets_retention_check_interval_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.max_size = max_size
        self.new_member_join_timeout_ms = new_member_join_timeout_ms
        self.offsets_partitions = offsets_partitions

    @classmethod
    def from_config(cls, config: Config) -> GroupSettings:
        return cls(config.group_min_session_timeout_ms, config.group_max_session_timeout_ms,
                   config.group_initial_rebalance_delay_ms, config.group_max_size,
                   offsets_partitions=config.offsets_topic_num_partitions,
                   offset_metadata_max_bytes=config.offset_metadata_max_bytes,
                   offsets_retention_ms=config.offsets_retention_minutes * 60_000,
                   offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
                   offsets_max_batch_bytes=config.message_max_bytes,
                   consumer=consumer_group_settings(config), share=share_group_settings(config))
