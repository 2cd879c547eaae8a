"""Metadata v0-v12: the brokers and each partition's leader, as the cluster view tells them.

In local mode (LocalView) this node is the only broker and the leader of every partition. A partition's
replicas and ISR are its leader and, in cluster mode, as many live nodes after it as the topic's replication
factor allows (data_plane/replication.py).
A partition with no leader (cluster mode, between owners) answers LEADER_NOT_AVAILABLE with
leader -1 and no replicas, as Kafka does for a partition whose leader is offline.

Follows KafkaApis.handleTopicMetadataRequest: null topics (or, in v0, an empty list)
mean all topics, internal ones included; v10/v11 requests naming a topic by id only,
or any request before v12 carrying a topic id, are invalid and get INVALID_REQUEST for
every requested topic (MetadataRequest.getErrorResponse); unknown topic ids get
UNKNOWN_TOPIC_ID; a topic the principal may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED with
its id and a null name when asked by id, with its name and a zero id when asked by name;
unknown names UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION
when the name is not a legal topic name. An unknown, legal name is created when the
request allows it (v4+ allow_auto_topic_creation; always before v4) and
auto.create.topics.enable is set, and answered LEADER_NOT_AVAILABLE, as Kafka does.
Authorized-operation fields are filled only when asked for; with no authorizer every
operation is allowed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from coordinator.cluster.view import NO_LEADER, listener_brokers
from coordinator.completion import settled
from coordinator.data_plane.replication import replica_nodes
from coordinator.data_plane.topic_catalog import TopicInfo, topic_name_error
from coordinator.errors import TopicAlreadyExists
from coordinator.handlers import sliced_encoding
from coordinator.handlers.wire_values import NO_THROTTLE, NOT_REQUESTED, ZERO_UUID
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import MetadataRequest

# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


class MetadataHandler:
    def __init__(self, services: Services) -> None:
        self.node = services.node
        self.catalog = services.topics
        self.data = services.data
        self.view = services.view
        self.access = services.access

    def visible(self, ctx: RequestContext, name: str) -> bool:
        """Whether the principal may DESCRIBE the topic (KafkaApis: else TOPIC_AUTHORIZATION_FAILED, or left out
        of an all-topics answer)."""
        return self.access.topic(ctx, Op.DESCRIBE, name)

    def may_create(self, ctx: RequestContext, name: str) -> bool:
        """Auto-creation needs CREATE on the cluster or on the topic."""
        return self.access.cluster(ctx, Op.CREATE) or self.access.topic(ctx, Op.CREATE, name)

    def partitions(self, topic: TopicInfo, live: list[int]) -> list[Fields]:
        """Each partition's leader and replicas (= ISR: the leader and the live nodes after it, replication.py)."""
        view, name, factor = self.view, topic.name, topic.replication_factor
        answers = []
        for index in range(topic.partitions):
            leader = view.leader(name, index)
            nodes = [] if leader == NO_LEADER else replica_nodes(leader, live, factor)
            code = ErrorCode.leader_not_available if leader == NO_LEADER else ErrorCode.none
            answers.append({"error_code": code, "partition_index": index, "leader_id": leader,
                            "leader_epoch": view.leader_epoch(name, index), "replica_nodes": nodes,
                            "isr_nodes": nodes, "offline_replicas": []})
        return answers

    def described(self, topic: TopicInfo, topic_ops: int, live: list[int]) -> Fields:
        return {"error_code": ErrorCode.none, "name": topic.name, "topic_id": topic.topic_id,
                "is_internal": topic.internal, "partitions": self.partitions(topic, live),
                "topic_authorized_operations": topic_ops}

    def classify(self, ctx: RequestContext, items: Iterable[Any], topic_ops: int, allow_auto_create: bool,
                 seen: set[str], topics: list[Fields], to_create: list[tuple[int, str]], live: list[int]) -> None:
        """Append each requested topic's answer to `topics`; names to auto-create to `to_create`
        as (place in `topics`, name). `live`: the ids of the brokers listed (sorted)."""
        catalog = self.catalog
        for item in items:
            topic_id = getattr(item, "topic_id", None) or ZERO_UUID
            if topic_id != ZERO_UUID:
                topic = catalog.by_id(topic_id)
                if topic is None:  # KafkaApis sets no authorized operations on these
                    topics.append(missing(None, topic_id, ErrorCode.unknown_topic_id, NOT_REQUESTED))
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
            if self.access.enabled and not self.visible(ctx, name):
                # KafkaApis: asked by id, the id (not sensitive) without the name; asked by name, the name
                # without the id -- never both, and nothing that says whether a named topic exists
                if topic_id != ZERO_UUID:
                    topics.append(missing(None, topic_id, ErrorCode.topic_authorization_failed, NOT_REQUESTED))
                else:
                    topics.append(missing(name, ZERO_UUID, ErrorCode.topic_authorization_failed, NOT_REQUESTED))
            elif topic is not None:
                topics.append(self.described(topic, self.topic_ops(ctx, name, topic_ops), live))
            elif topic_name_error(name):
                topics.append(missing(name, ZERO_UUID, ErrorCode.invalid_topic_exception, topic_ops))
            elif allow_auto_create and self.access.enabled and not self.may_create(ctx, name):
                topics.append(missing(name, ZERO_UUID, ErrorCode.topic_authorization_failed, NOT_REQUESTED))
            else:
                if allow_auto_create:
                    to_create.append((len(topics), name))
                topics.append(missing(name, ZERO_UUID, ErrorCode.unknown_topic_or_partition, topic_ops))

    def topic_ops(self, ctx: RequestContext, name: str, requested: int) -> int:
        """A topic's `topic_authorized_operations` when asked for (`requested` is not NOT_REQUESTED)."""
        if requested == NOT_REQUESTED:
            return requested
        return self.access.operations(ctx, ResourceType.TOPIC, name, requested)

    def with_creation(self, topics: list[Fields], to_create: list[tuple[int, str]], topic_ops: int,
                      respond: Callable[[list[Fields]], object]) -> object:
        """Create what may be auto-created, then answer (LEADER_NOT_AVAILABLE for those)."""
        data = self.data
        if not to_create:
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
                if error is None or isinstance(error, TopicAlreadyExists):  # made here, or by another node
                    topics[creating[topic.name]] = missing(topic.name, ZERO_UUID, ErrorCode.leader_not_available,
                                                           topic_ops)
            return await settled(respond(topics))

        return after_creation()

    def handle(self, ctx: RequestContext, request: MetadataRequest) -> object:
        version = ctx.api_version
        cls = API_TABLE[ApiKey.METADATA].responses[version]
        requested = request.topics
        topic_ops = TOPIC_OPERATIONS if getattr(request, "include_topic_authorized_operations", False) \
            else NOT_REQUESTED
        cluster_ops = self.access.cluster_operations(ctx, CLUSTER_OPERATIONS) \
            if getattr(request, "include_cluster_authorized_operations", False) else NOT_REQUESTED
        view = self.view
        brokers = listener_brokers(view.brokers(), ctx.listener)
        live = sorted(b.node_id for b in brokers)
        head = {"throttle_time": NO_THROTTLE, "cluster_id": self.node.cluster_id,
                "controller_id": view.controller_id(),
                "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack} for b in brokers],
                "cluster_authorized_operations": cluster_ops}

        def respond(topics: list[Fields]) -> object:
            if len(topics) > sliced_encoding.SLICE:
                # cluster_authorized_operations (int32, v8-v10) follows the topics
                return sliced_encoding.encode_sliced(cls, head, "topics", topics, flexible=version >= 9,
                                                     after=4 if 8 <= version <= 10 else 0)
            return build(cls, **head, topics=topics)

        if requested is None or (version == 0 and not requested):  # all topics
            visible = [t for t in self.catalog.all() if not self.access.enabled or self.visible(ctx, t.name)]
            return respond([self.described(topic, self.topic_ops(ctx, topic.name, topic_ops), live)
                            for topic in visible])
        if version < 12 and any(
            getattr(t, "name", "") is None or (getattr(t, "topic_id", None) or ZERO_UUID) != ZERO_UUID
            for t in requested
        ):
            return respond([missing(t.name or "", getattr(t, "topic_id", None) or ZERO_UUID,
                                    ErrorCode.invalid_request, NOT_REQUESTED) for t in requested])

        allow_auto_create = version < 4 or bool(getattr(request, "allow_auto_topic_creation", True))
        topics: list[Fields] = []
        to_create: list[tuple[int, str]] = []
        seen: set[str] = set()
        if len(requested) <= sliced_encoding.SLICE:
            self.classify(ctx, requested, topic_ops, allow_auto_create, seen, topics, to_create, live)
            return self.with_creation(topics, to_create, topic_ops, respond)

        async def in_slices() -> object:  # a huge request: other connections are served in between
            await sliced_encoding.in_slices(requested, lambda chunk: self.classify(
                ctx, chunk, topic_ops, allow_auto_create, seen, topics, to_create, live))
            return await settled(self.with_creation(topics, to_create, topic_ops, respond))

        return in_slices()


def missing(name: str | None, topic_id: uuid.UUID, code: ErrorCode, topic_ops: int) -> Fields:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False,
            "partitions": [], "topic_authorized_operations": topic_ops}


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.METADATA, MetadataHandler(services).handle)
