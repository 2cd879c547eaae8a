"""CreateTopics v2-v7 and DeleteTopics v1-v6 (kio has nothing older; Kafka 4 dropped those).

CreateTopics follows ControllerApis.createTopics / ReplicationControlManager: names
given twice -> INVALID_REQUEST "Duplicate topic name."; then per topic the checks of
DataPlane.create_topic (illegal name, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR (local mode: only 1; cluster mode: up to the live nodes, replication.py),
INVALID_REPLICA_ASSIGNMENT,
INVALID_CONFIG). validate_only runs every check and creates nothing. v5+ results
carry num_partitions, replication_factor and every supported config with its
source; errors carry -1 and no configs.

A request whose topics need more than 10,000 metadata records (record_budget.py) fails whole:
every topic answers POLICY_VIOLATION, as Kafka's controller.

DeleteTopics follows ControllerApis.deleteTopics: duplicates -> INVALID_REQUEST; an
unknown name -> UNKNOWN_TOPIC_OR_PARTITION, an unknown id (v6) -> UNKNOWN_TOPIC_ID.
Kafka lets a client delete `__consumer_offsets`; here the group coordinator owns it,
so it is refused with TOPIC_DELETION_DISABLED and the message of Kafka's own
kafka-topics tool ("... is a kafka internal topic and is not allowed to be marked
for deletion.").
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from coordinator.completion import settled
from coordinator.data_plane import DataPlane
from coordinator.data_plane.partition import Partition
from coordinator.data_plane.record_budget import EXCESSIVE_BATCH, RecordBudget, topic_records
from coordinator.data_plane.topic_catalog import TopicInfo
from coordinator.errors import KafkaError, UnknownTopicId, UnknownTopicOrPartition, error_code_for
from coordinator.handlers import sliced_encoding
from coordinator.handlers.wire_values import NO_THROTTLE, ZERO_UUID
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import CreateTopicsRequest, DeleteTopicsRequest, DeleteTopicsV6

TOPIC_CONFIG_SOURCE, DEFAULT_CONFIG_SOURCE = 1, 5  # DescribeConfigs ConfigSource ids


def _answer(cls: type, field: str, results: list[Fields], flexible: bool) -> object:
    """The response; past SLICE results, encoded in slices (sliced_encoding)."""
    if len(results) > sliced_encoding.SLICE:
        return sliced_encoding.encode_sliced(cls, {"throttle_time": NO_THROTTLE}, field, results, flexible=flexible)
    return build(cls, throttle_time=NO_THROTTLE, **{field: results})


def refused(name: str, code: ErrorCode, message: str) -> Fields:
    return {"name": name, "topic_id": ZERO_UUID, "error_code": code, "error_message": message,
            "num_partitions": -1, "replication_factor": -1, "configs": None}


class CreateTopicsHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def config_list(self, overrides: dict[str, str]) -> list[Fields]:
        merged = {**self.data.base_configs, **overrides}
        return [{"name": name, "value": value, "read_only": False, "is_sensitive": False,
                 "config_source": TOPIC_CONFIG_SOURCE if name in overrides else DEFAULT_CONFIG_SOURCE}
                for name, value in sorted(merged.items())]

    def created(self, name: str, topic_id: uuid.UUID, partitions: int, overrides: dict[str, str],
                factor: int) -> Fields:
        return {"name": name, "topic_id": topic_id, "error_code": ErrorCode.none, "error_message": None,
                "num_partitions": partitions, "replication_factor": factor, "configs": self.config_list(overrides)}

    def handle(self, ctx: RequestContext, request: CreateTopicsRequest) -> object:
        data = self.data
        created = self.created
        spec = API_TABLE[ApiKey.CREATE_TOPICS]
        counts = Counter(t.name for t in request.topics)
        results = [refused(name, ErrorCode.invalid_request, "Duplicate topic name.")
                   for name, count in counts.items() if count > 1]
        reserved: list[tuple[int, TopicInfo]] = []  # (place in `results`, reserved topic)
        budget = RecordBudget()

        access = self.access
        may_create_any = not access.enabled or access.cluster(ctx, Op.CREATE)

        def check(topics: Iterable[Any]) -> None:  # kio's topics of the request's version
            for topic in topics:
                if counts[topic.name] > 1 or budget.exceeded:
                    continue
                if not may_create_any and not access.topic(ctx, Op.CREATE, topic.name):  # KafkaApis: CREATE
                    results.append(refused(topic.name, ErrorCode.topic_authorization_failed,
                                           "Authorization failed."))
                    continue
                args = (topic.name, topic.num_partitions, topic.replication_factor,
                        [(a.partition_index, list(a.broker_ids)) for a in topic.assignments],
                        {c.name: c.value for c in topic.configs})
                try:
                    if request.validate_only:
                        partitions, overrides, factor = data.check_topic(*args)
                        results.append(created(topic.name, ZERO_UUID, partitions, overrides, factor))
                    else:
                        info = data.reserve_topic(*args)
                        reserved.append((len(results), info))
                        partitions, overrides = info.partitions, info.config_map()
                        results.append({})
                except KafkaError as exc:
                    results.append(refused(topic.name, exc.code, str(exc)))
                    continue
                budget.take(topic_records(partitions, len(overrides)))

        def too_large() -> bool:
            """Past MAX_RECORDS_PER_USER_OP the whole request fails, as Kafka's: every topic of
            it (in request order) answers POLICY_VIOLATION and nothing is created."""
            if not budget.exceeded:
                return False
            data.catalog.release([info.name for _, info in reserved])
            reserved.clear()
            results[:] = [refused(t.name, ErrorCode.policy_violation, EXCESSIVE_BATCH) for t in request.topics]
            return True

        def respond() -> object:
            version = ctx.api_version
            return _answer(spec.responses[version], "topics", results, spec.request_is_flexible(version))

        async def after_creation() -> object:
            # every topic of the request with one catalog write, off the loop
            errors = await data.create_topics([info for _, info in reserved])
            for (place, info), error in zip(reserved, errors):
                if error is None:
                    results[place] = created(info.name, info.topic_id, info.partitions, info.config_map(),
                                             info.replication_factor)
                elif isinstance(error, KafkaError):
                    results[place] = refused(info.name, error.code, str(error))
                else:  # the disk refused the new partition directories or the catalog
                    results[place] = refused(info.name, error_code_for(error), f"Cannot create the topic: {error}")
            return await settled(respond())

        if len(request.topics) <= sliced_encoding.SLICE:
            check(request.topics)
            return respond() if too_large() or not reserved else after_creation()

        async def in_slices() -> object:  # a huge request: other connections are served in between
            await sliced_encoding.in_slices(request.topics, check)
            return await (settled(respond()) if too_large() or not reserved else after_creation())

        return in_slices()


def _wanted(version: int, request: DeleteTopicsRequest) -> list[tuple[str | None, uuid.UUID]]:
    """The topics to delete as (name, id): v6 names each by name or by id, v1-v5 by name."""
    if version >= 6:
        if TYPE_CHECKING:  # annotations only (no code on the request's path)
            assert isinstance(request, DeleteTopicsV6)
        return [(t.name, t.topic_id or ZERO_UUID) for t in request.topics]
    if TYPE_CHECKING:
        assert not isinstance(request, DeleteTopicsV6)
    return [(name, ZERO_UUID) for name in request.topic_names]


class DeleteTopicsHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def handle(self, ctx: RequestContext, request: DeleteTopicsRequest) -> object:
        data = self.data
        spec = API_TABLE[ApiKey.DELETE_TOPICS]
        version = ctx.api_version
        wanted = _wanted(version, request)
        results: list[Fields] = []
        detached: list[tuple[TopicInfo, list[Partition]]] = []
        names = Counter(n for n, i in wanted if n is not None)
        ids = Counter(i for n, i in wanted if n is None and i != ZERO_UUID)

        def answer(name: str | None, topic_id: uuid.UUID, code: ErrorCode, message: str | None = None) -> None:
            results.append({"name": name, "topic_id": topic_id, "error_code": code, "error_message": message})

        for name in [n for n, c in names.items() if c > 1]:
            answer(name, ZERO_UUID, ErrorCode.invalid_request, "Duplicate topic name.")
        for topic_id in [i for i, c in ids.items() if c > 1]:
            answer(None, topic_id, ErrorCode.invalid_request, "Duplicate topic id.")

        def detach(chunk: Iterable[tuple[str | None, uuid.UUID]]) -> None:
            for name, topic_id in chunk:
                if (name is not None and names[name] > 1) or (name is None and ids[topic_id] > 1):
                    continue
                if name is not None and topic_id != ZERO_UUID:
                    answer(name, topic_id, ErrorCode.invalid_request,
                           "You may not specify both topic name and topic id.")
                    continue
                if name is None and topic_id == ZERO_UUID:
                    answer(None, ZERO_UUID, ErrorCode.invalid_request, "Neither topic name nor id were specified.")
                    continue
                try:
                    if name is not None:
                        topic = data.catalog.get(name)
                        if topic is None and not self.access.topic(ctx, Op.DESCRIBE, name):
                            raise KafkaError("Authorization failed.", ErrorCode.topic_authorization_failed)
                        if topic is None:
                            raise UnknownTopicOrPartition("This server does not host this topic-partition.")
                    else:
                        topic = data.catalog.by_id(topic_id)
                        if topic is None:
                            raise UnknownTopicId("This server does not host this topic ID.")
                    if not self.access.topic(ctx, Op.DELETE, topic.name):  # KafkaApis: DELETE on the topic
                        raise KafkaError("Authorization failed.", ErrorCode.topic_authorization_failed)
                    detached.append((topic, data.detach_topic(topic)))
                except KafkaError as exc:
                    answer(name, topic_id, exc.code, str(exc))
                    continue
                answer(topic.name, topic.topic_id if version >= 6 else ZERO_UUID, ErrorCode.none)

        def respond() -> object:
            return _answer(spec.responses[version], "responses", results, spec.request_is_flexible(version))

        async def after_removal() -> object:
            try:
                await data.delete_topics(detached)  # one catalog write for all, off the loop
            except Exception as exc:  # the catalog write failed: the deletion is not durable
                code = error_code_for(exc)
                gone = {topic.name for topic, _ in detached}
                for result in results:
                    if result["error_code"] == ErrorCode.none and result["name"] in gone:
                        result.update(error_code=code, error_message=f"Cannot write the topic catalog: {exc}")
            return await settled(respond())

        if len(wanted) <= sliced_encoding.SLICE:
            detach(wanted)
            return after_removal() if detached else respond()

        async def in_slices() -> object:  # a huge request: other connections are served in between
            await sliced_encoding.in_slices(wanted, detach)
            return await (after_removal() if detached else settled(respond()))

        return in_slices()


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.CREATE_TOPICS, CreateTopicsHandler(services.data, services.access).handle)
    dispatcher.register(ApiKey.DELETE_TOPICS, DeleteTopicsHandler(services.data, services.access).handle)
