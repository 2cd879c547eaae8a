"""Topic config changes (AlterConfigs, IncrementalAlterConfigs) on the live partitions.

A change is validated as at creation (topic_configs.validate), stored by the catalog (one write,
off the loop; in cluster mode PostgreSQL NOTIFYs the other nodes, whose catalog refresh calls
`apply` too) and then applied to every hosted partition of the topic: the next Produce checks
max.message.bytes / message.timestamp.type against it, the next retention pass uses the new
retention and compaction settings, and the next segment roll the new segment.bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from coordinator.data_plane.partition import Partition
from coordinator.data_plane.topic_catalog import TopicInfo
from coordinator.data_plane.topic_configs import EffectiveConfig
from storage.log import PartitionLog

log = structlog.get_logger(__name__)


def apply(partitions: Mapping[tuple[str, int], Partition], base: Mapping[str, str], topic: TopicInfo) -> None:
    """Give each hosted partition of `topic` (among the data plane's `partitions`) its new effective
    config (`base`: the data plane's defaults)."""
    config = EffectiveConfig.resolve(topic.config_map(), base)
    applied = 0
    for index in range(topic.partitions):
        part = partitions.get((topic.name, index))
        if part is None:
            continue
        part.config = config
        if isinstance(part.log, PartitionLog):  # cluster mode's replica keeps its own segment size
            part.log.segment_bytes = config.segment_bytes
        applied += 1
    log.info("data_plane.topic.reconfigured", topic=topic.name, partitions=applied, configs=topic.config_map())

