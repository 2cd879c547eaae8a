"""Metadata v0-v12: this node as the only broker and the leader of every partition.

Follows KafkaApis.handleTopicMetadataRequest: null topics (or, in v0, an empty list)
mean all topics, internal ones included; v10/v11 requests naming a topic by id only,
or any request before v12 carrying a topic id, are invalid and get INVALID_REQUEST for
every requested topic (MetadataRequest.getErrorResponse); unknown topic ids get
UNKNOWN_TOPIC_ID; unknown names UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION
when the name is not a legal topic name. An unknown, legal name is created when the
request allows it (v4+ allow_auto_topic_creation; always before v4) and
auto.create.topics.enable is set, and answered LEADER_NOT_AVAILABLE, as Kafka does.
Authorized-operation fields are filled only when asked for; with no authorizer every
operation is allowed.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from coordinator.data_plane.topic_catalog import TopicInfo, topic_name_error
from coordinator.handlers import sliced_encoding
from coordinator.handlers.api_versions import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build

NOT_REQUESTED = -(2**31)  # Int.MinValue: "authorized operations not requested"
ZERO_UUID = uuid.UUID(int=0)

# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def register(dispatcher: Dispatcher, services: Services) -> None:
    node = services.node
    catalog = services.topics
    responses = API_TABLE[ApiKey.METADATA].responses

    def partitions(topic: TopicInfo) -> list[dict]:
        nodes = [node.node_id]
        return [
            {"error_code": ErrorCode.none, "partition_index": index, "leader_id": node.node_id,
             "leader_epoch": 0, "replica_nodes": nodes, "isr_nodes": nodes, "offline_replicas": []}
            for index in range(topic.partitions)
        ]

    def described(topic: TopicInfo, topic_ops: int) -> dict:
        return {"error_code": ErrorCode.none, "name": topic.name, "topic_id": topic.topic_id,
                "is_internal": topic.internal, "partitions": partitions(topic),
                "topic_authorized_operations": topic_ops}

    def missing(name: str | None, topic_id: uuid.UUID, code: ErrorCode, topic_ops: int) -> dict:
        return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False,
                "partitions": [], "topic_authorized_operations": topic_ops}

    def classify(items, topic_ops: int, allow_auto_create: bool, seen: set[str], topics: list[dict],
                 to_create: list[tuple[int, str]]) -> None:
        """Append each requested topic's answer to `topics`; names to auto-create to `to_create`
        as (place in `topics`, name)."""
        for item in items:
            topic_id = getattr(item, "topic_id", None) or ZERO_UUID
            if topic_id != ZERO_UUID:
                topic = catalog.by_id(topic_id)
                if topic is None:
                    topics.append(missing(None, topic_id, ErrorCode.unknown_topic_id, topic_ops))
                    continue
                name = topic.name
            else:
                name = item.name
                if name is None:
                    topics.append(missing("", ZERO_UUID, ErrorCode.invalid_request, topic_ops))
                    continue
            if name in seen:
                continue
            seen.add(name)
            topic = catalog.get(name)
            if topic is not None:
                topics.append(described(topic, topic_ops))
            elif topic_name_error(name):
                topics.append(missing(name, ZERO_UUID, ErrorCode.invalid_topic_exception, topic_ops))
            else:
                if allow_auto_create:
                    to_create.append((len(topics), name))
                topics.append(missing(name, ZERO_UUID, ErrorCode.unknown_topic_or_partition, topic_ops))

    def with_creation(topics: list[dict], to_create: list[tuple[int, str]], topic_ops: int, respond) -> object:
        """Create what may be auto-created, then answer (LEADER_NOT_AVAILABLE for those)."""
        data = services.data
        if not to_create or data is None:
            return respond(topics)
        # Kafka 3.9 (AutoTopicCreationManager): the call that creates a topic answers
        # LEADER_NOT_AVAILABLE with no partitions; the client's next Metadata sees it. So does
        # a topic another request is creating now.
        reserved, busy = data.auto_create_names([name for _, name in to_create])
        creating = {name: place for place, name in to_create}
        for name in busy:
            topics[creating[name]] = missing(name, ZERO_UUID, ErrorCode.leader_not_available, topic_ops)
        if not reserved:
            return respond(topics)

        async def after_creation() -> object:
            errors = await data.create_topics(reserved)  # all of them with one catalog write
            for topic, error in zip(reserved, errors):
                if error is None:
                    topics[creating[topic.name]] = missing(topic.name, ZERO_UUID, ErrorCode.leader_not_available,
                                                           topic_ops)
            answer = respond(topics)
            return (await answer) if hasattr(answer, "__await__") else answer

        return after_creation()

    def handle(ctx: RequestContext, request) -> object:
        version = ctx.api_version
        cls = responses[version]
        requested = request.topics
        all_topics = requested is None or (version == 0 and not requested)
        topic_ops = TOPIC_OPERATIONS if getattr(request, "include_topic_authorized_operations", False) \
            else NOT_REQUESTED
        cluster_ops = CLUSTER_OPERATIONS if getattr(request, "include_cluster_authorized_operations", False) \
            else NOT_REQUESTED
        head = {"throttle_time": NO_THROTTLE, "cluster_id": node.cluster_id, "controller_id": node.node_id,
                "brokers": [{"node_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}],
                "cluster_authorized_operations": cluster_ops}

        def respond(topics: list[dict]) -> object:
            if len(topics) > sliced_encoding.SLICE:
                # cluster_authorized_operations (int32, v8-v10) follows the topics
                return sliced_encoding.encode_sliced(cls, head, "topics", topics, flexible=version >= 9,
                                                     after=4 if 8 <= version <= 10 else 0)
            return build(cls, **head, topics=topics)

        if all_topics:
            return respond([described(topic, topic_ops) for topic in catalog.all()])
        if version < 12 and any(
            getattr(t, "name", "") is None or (getattr(t, "topic_id", None) or ZERO_UUID) != ZERO_UUID
            for t in requested
        ):
            return respond([missing(t.name or "", getattr(t, "topic_id", None) or ZERO_UUID,
                                    ErrorCode.invalid_request, NOT_REQUESTED) for t in requested])

        allow_auto_create = version < 4 or bool(getattr(request, "allow_auto_topic_creation", True))
        topics: list[dict] = []
        to_create: list[tuple[int, str]] = []
        seen: set[str] = set()
        if len(requested) <= sliced_encoding.SLICE:
            classify(requested, topic_ops, allow_auto_create, seen, topics, to_create)
            return with_creation(topics, to_create, topic_ops, respond)

        async def in_slices() -> object:  # a huge request: other connections are served in between
            await sliced_encoding.in_slices(requested, lambda chunk: classify(
                chunk, topic_ops, allow_auto_create, seen, topics, to_create))
            answer = with_creation(topics, to_create, topic_ops, respond)
            return (await answer) if hasattr(answer, "__await__") else answer

        return in_slices()

    dispatcher.register(ApiKey.METADATA, handle)
