"""DescribeLogDirs v1-v4 (kio has no v0): ReplicaManager.describeLogDirs for this node's one log dir.

log.dirs (its absolute path; in cluster mode the node's scratch copy) with each hosted topic
partition asked for (null topics: every hosted one; a topic with none of its partitions here is left
out, as Kafka's): its size (the bytes of its segments), offset_lag 0 (no future logs, so no lag) and
is_future_key false; total_bytes and usable_bytes (v4) from statvfs (usable: what an unprivileged
writer may use, as Java's FileStore.getUsableSpace). A dir that statvfs cannot read answers
KAFKA_STORAGE_ERROR. The partitions of `__consumer_offsets` (the group coordinator's logs) are not
listed: this lists the data plane's topic logs.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.data_plane import DataPlane
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build
from storage.log_protocol import PartitionLogProtocol

if TYPE_CHECKING:
    from protocol.request_types import DescribeLogDirsRequest


def log_size(lg: PartitionLogProtocol) -> int:
    """The bytes of a partition log's segments (a PostgreSQL-backed log: its local replica's)."""
    segments = getattr(lg, "segments", None)
    if segments is not None:
        return sum(segment.size for segment in segments)
    return sum(info.size for info in lg.segment_infos())


class DescribeLogDirsHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def handle(self, ctx: RequestContext, request: DescribeLogDirsRequest) -> object:
        version = ctx.api_version
        cls = API_TABLE[ApiKey.DESCRIBE_LOG_DIRS].responses[version]
        if not self.access.cluster(ctx, Op.DESCRIBE):  # KafkaApis: DESCRIBE on the cluster
            return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                         results=[])
        path = os.path.abspath(self.data.settings.log_dir)
        try:
            stats = os.statvfs(path)
        except OSError:
            result = {"error_code": ErrorCode.kafka_storage_error, "log_dir": path, "topics": [],
                      "total_bytes": -1, "usable_bytes": -1}
            return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=[result])
        wanted = None if request.topics is None else {(t.topic, p) for t in request.topics for p in t.partitions}
        topics: dict[str, list[Fields]] = defaultdict(list)
        for key, part in sorted(self.data.partitions.items()):
            if wanted is None or key in wanted:
                topics[part.topic].append({"partition_index": part.index, "partition_size": log_size(part.log),
                                           "offset_lag": 0, "is_future_key": False})
        result = {"error_code": ErrorCode.none, "log_dir": path,
                  "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
                  "total_bytes": stats.f_blocks * stats.f_frsize, "usable_bytes": stats.f_bavail * stats.f_frsize}
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=[result])


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.DESCRIBE_LOG_DIRS, DescribeLogDirsHandler(services.data, services.access).handle)
