"""DescribeTopicPartitions v0 (Kafka 3.7+): DescribeTopicPartitionsRequestHandler and
KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse.

No topics asked: every topic (internal ones too); else those asked. Either way only names at or after
the cursor's topic, sorted, and at most response_partition_limit partitions (capped at Kafka's
max.request.partition.size.limit default, 2000, at least 1) from the cursor's partition on: when
they do not fit, next_cursor names the first one left out. A cursor topic missing from the asked
topics, or a negative cursor partition, fails the request: INVALID_REQUEST for each asked topic. An
asked topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal
name). Each partition: its leader as the cluster view tells it (-1 and no error when it has none),
the view's leader epoch, replicas and ISR as Metadata's (the leader, then live nodes up to the topic's
replication factor: data_plane/replication.py), empty ELR lists; with no authorizer,
every topic operation is authorized.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from coordinator.cluster.view import NO_LEADER, listener_brokers
from coordinator.data_plane.replication import replica_nodes
from coordinator.data_plane.topic_catalog import TopicInfo, topic_name_error
from coordinator.handlers.metadata import TOPIC_OPERATIONS
from coordinator.handlers.wire_values import NO_THROTTLE, NOT_REQUESTED, ZERO_UUID
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build
from rules.placement import OFFSETS_TOPIC

if TYPE_CHECKING:
    from protocol.request_types import DescribeTopicPartitionsRequest

MAX_PARTITIONS_PER_RESPONSE = 2000  # Kafka's max.request.partition.size.limit default


class DescribeTopicPartitionsHandler:
    def __init__(self, services: Services) -> None:
        self.catalog = services.topics
        self.view = services.view
        self.access = services.access

    def partitions(self, topic: TopicInfo, start: int, upper: int, live: list[int]) -> list[Fields]:
        view, name, factor = self.view, topic.name, topic.replication_factor
        out = []
        for index in range(start, upper):
            leader = view.leader(name, index)
            nodes = [] if leader == NO_LEADER else replica_nodes(leader, live, factor)
            out.append({"error_code": ErrorCode.none, "partition_index": index, "leader_id": leader,
                        "leader_epoch": view.leader_epoch(name, index), "replica_nodes": nodes, "isr_nodes": nodes,
                        "eligible_leader_replicas": [], "last_known_elr": [], "offline_replicas": []})
        return out

    def handle(self, ctx: RequestContext, request: DescribeTopicPartitionsRequest) -> object:
        cls = API_TABLE[ApiKey.DESCRIBE_TOPIC_PARTITIONS].responses[ctx.api_version]
        fetch_all = not request.topics
        cursor = request.cursor
        cursor_name = cursor.topic_name if cursor is not None else ""
        asked = [t.name for t in self.catalog.all()] if fetch_all else [t.name for t in request.topics]
        names = sorted({name for name in asked if name >= cursor_name})
        if (cursor is not None and not fetch_all and cursor.topic_name not in names) or \
                (cursor is not None and cursor.partition_index < 0):
            failed = [{"error_code": ErrorCode.invalid_request, "name": t.name, "topic_id": ZERO_UUID,
                       "is_internal": False, "partitions": []} for t in request.topics]
            return build(cls, throttle_time=NO_THROTTLE, topics=failed, next_cursor=None)
        remaining = max(min(MAX_PARTITIONS_PER_RESPONSE, request.response_partition_limit), 1)
        live = sorted(b.node_id for b in listener_brokers(self.view.brokers(), ctx.listener))
        topics: list[Fields] = []
        next_cursor = None
        for name in names:
            if remaining == 0:
                next_cursor = {"topic_name": name, "partition_index": 0}
                break
            topic = self.catalog.get(name)
            if self.access.enabled and not self.access.topic(ctx, Op.DESCRIBE, name):  # KafkaApis: DESCRIBE
                if not fetch_all:  # listed: refused; all topics: left out
                    topics.append({"error_code": ErrorCode.topic_authorization_failed, "name": name,
                                   "topic_id": ZERO_UUID, "is_internal": False, "partitions": [],
                                   "topic_authorized_operations": NOT_REQUESTED})
                continue
            if topic is None:
                if not fetch_all:
                    code = ErrorCode.invalid_topic_exception if topic_name_error(name) else \
                        ErrorCode.unknown_topic_or_partition
                    topics.append({"error_code": code, "name": name, "topic_id": ZERO_UUID,
                                   "is_internal": name == OFFSETS_TOPIC, "partitions": [],
                                   "topic_authorized_operations": TOPIC_OPERATIONS})
                continue
            start = cursor.partition_index if cursor is not None and name == cursor_name else 0
            upper = min(topic.partitions, start + remaining)
            parts = self.partitions(topic, start, upper, live)
            topics.append({"error_code": ErrorCode.none, "name": name, "topic_id": topic.topic_id,
                           "is_internal": topic.internal, "partitions": parts,
                           "topic_authorized_operations": self.access.operations(ctx, ResourceType.TOPIC, name,
                                                                                  TOPIC_OPERATIONS)})
            if upper < topic.partitions:
                next_cursor = {"topic_name": name, "partition_index": upper}
                break
            remaining -= len(parts)
        return build(cls, throttle_time=NO_THROTTLE, topics=topics, next_cursor=next_cursor)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.DESCRIBE_TOPIC_PARTITIONS, DescribeTopicPartitionsHandler(services).handle)
