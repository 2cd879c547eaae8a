"""DescribeConfigs v1-v4, AlterConfigs v0-v2 and IncrementalAlterConfigs v0-v1 (kio has no
DescribeConfigs v0; Kafka 4 dropped it), for TOPIC, BROKER and GROUP resources, as Kafka's KRaft
broker (ConfigHelper, ConfigAdminManager) and controller (ConfigurationControlManager) answer.

Describe: an unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; a broker resource named "" lists
the dynamic cluster defaults, one named by this node's id lists every setting (with the dynamic
ones in force), another id -> INVALID_REQUEST; a GROUP resource lists the consumer.* and share.* group configs
(coordinator/share/runtime/group_configs.py). Other resource types (BROKER_LOGGER, CLIENT_METRICS)
-> INVALID_REQUEST "Unsupported resource type" (Kafka answers BROKER_LOGGER; this server has no
loggers to name).

Alter: duplicate keys in one resource or a resource given twice -> INVALID_REQUEST; a topic's
new config set is validated as at creation (INVALID_CONFIG), stored (it survives restarts;
cluster mode: PostgreSQL, every node applies it) and applied to the live partitions
(data_plane/topic_reconfig.py). AlterConfigs replaces the topic's whole override set;
IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT (the last two on LIST configs
only). A BROKER resource ("" or this node's id) changes the dynamic broker configs of that level
(handlers/broker_config_changes.py, data_plane/broker_configs.py): Kafka's DynamicLogConfig ones;
any other -> INVALID_REQUEST "Cannot update these configs dynamically: Set(..)". A GROUP resource
(IncrementalAlterConfigs only, as Kafka; DESCRIBE_CONFIGS / ALTER_CONFIGS on the group) sets or deletes
its consumer.* and share.* configs, checked against the broker's bounds (INVALID_CONFIG) and persisted.
validate_only runs every check and changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from coordinator.config_values import ConfigError
from coordinator.data_plane import DataPlane
from coordinator.data_plane.topic_catalog import TopicInfo, topic_name_error
from coordinator.data_plane.topic_config_defs import TOPIC_CONFIG_DEFS, ConfigType
from coordinator.data_plane.topic_configs import check_together, check_value
from coordinator.errors import InvalidConfig, InvalidRequest, KafkaError, UnknownTopicOrPartition, error_code_for
from coordinator.handlers import broker_config_changes, config_entries
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.security.access import Op
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

if TYPE_CHECKING:
    from protocol.request_types import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest

TOPIC, BROKER, GROUP = 2, 4, 32
RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def unsupported(resource_type: int) -> InvalidRequest:
    return InvalidRequest(f"Unsupported resource type: {RESOURCE_TYPES.get(resource_type, 'UNKNOWN')}")


#: a resource of a DescribeConfigs, AlterConfigs or IncrementalAlterConfigs request, and its config entries in
#: `configs` (kio's classes of the request's version: their fields differ by API)
Resource = Any


class ConfigsHandler:
    def __init__(self, services: Services) -> None:
        self.config = services.config
        self.data: DataPlane = services.data
        self.node_id = services.config.node_id
        self.dynamic = services.dynamic
        self.access = services.access
        self.group_configs = services.share.group_configs

    def _authorize(self, ctx: RequestContext, resource: Resource, operation: Op) -> None:
        """KafkaApis: DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, or on the cluster for a broker resource."""
        access = self.access
        if not access.enabled:
            return
        if resource.resource_type == TOPIC and not access.topic(ctx, operation, resource.resource_name):
            raise KafkaError("Authorization failed.", ErrorCode.topic_authorization_failed)
        if resource.resource_type == BROKER and not access.cluster(ctx, operation):
            raise KafkaError("Authorization failed.", ErrorCode.cluster_authorization_failed)
        if resource.resource_type == GROUP and not access.group(ctx, operation, resource.resource_name):
            raise KafkaError("Authorization failed.", ErrorCode.group_authorization_failed)

    # ----------------------------------------------------------------- describe
    def describe(self, ctx: RequestContext, request: DescribeConfigsRequest) -> object:
        results = []
        for resource in request.resources:
            try:
                self._authorize(ctx, resource, Op.DESCRIBE_CONFIGS)
                configs = self._describe_one(resource, request)
                results.append(self._result(resource, ErrorCode.none, None, configs=configs))
            except KafkaError as exc:  # Kafka's describe of an unknown topic carries no message
                message = None if isinstance(exc, UnknownTopicOrPartition) else str(exc)
                results.append(self._result(resource, exc.code, message, configs=[]))
        return build(API_TABLE[ApiKey.DESCRIBE_CONFIGS].responses[ctx.api_version], throttle_time=NO_THROTTLE,
                     results=results)

    def _describe_one(self, resource: Resource, request: DescribeConfigsRequest) -> list[Fields]:
        synonyms, docs = request.include_synonyms, getattr(request, "include_documentation", False)
        keys = resource.configuration_keys
        if resource.resource_type == TOPIC:
            topic = self._topic(resource.resource_name, describe=True)
            return config_entries.topic_entries(topic.config_map(), self.data.base_configs, self.config, keys,
                                                synonyms, docs, self.dynamic)
        if resource.resource_type == BROKER:
            if resource.resource_name == "":
                return config_entries.cluster_default_entries(self.dynamic, self.config, keys, synonyms, docs)
            try:
                broker = int(resource.resource_name)
            except ValueError:
                raise InvalidRequest(f"Broker id must be an integer, but it is: {resource.resource_name}") from None
            if broker != self.node_id:
                raise InvalidRequest(f"Unexpected broker id, expected {self.node_id} or empty string, but received "
                                     f"{resource.resource_name}")
            return config_entries.broker_entries(self.config, keys, synonyms, docs, self.dynamic)
        if resource.resource_type == GROUP:
            return self.group_configs.entries(resource.resource_name, keys, docs)
        raise unsupported(resource.resource_type)

    def _topic(self, name: str, describe: bool = False) -> TopicInfo:
        if not describe and name == "":
            raise InvalidRequest("Default topic resources are not allowed.")
        reason = topic_name_error(name)
        if reason:
            raise KafkaError(f"Topic name {name!r} is illegal: {reason}", ErrorCode.invalid_topic_exception)
        topic = self.data.catalog.get(name)
        if topic is None or topic.internal:  # __consumer_offsets is the group coordinator's own log
            raise UnknownTopicOrPartition(f"The topic '{name}' does not exist.")
        return topic

    @staticmethod
    def _result(resource: Resource, code: ErrorCode, message: str | None, **more: object) -> Fields:
        return {"error_code": code, "error_message": message, "resource_type": resource.resource_type,
                "resource_name": resource.resource_name, **more}

    # -------------------------------------------------------------------- alter
    def alter(self, ctx: RequestContext, request: AlterConfigsRequest) -> object:
        return self._alter(ctx, request, ApiKey.ALTER_CONFIGS, self._replaced)

    def incremental_alter(self, ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> object:
        return self._alter(ctx, request, ApiKey.INCREMENTAL_ALTER_CONFIGS, self._incremented)

    def _alter(self, ctx: RequestContext, request: AlterConfigsRequest | IncrementalAlterConfigsRequest, api: ApiKey,
               new_set: Callable[[TopicInfo, tuple[Any, ...]], dict[str, str]]) -> object:
        counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
        results: list[Fields] = []
        changes: list[tuple[int, TopicInfo, dict[str, str]]] = []  # (place in results, topic, new set)
        levels: list[tuple[int, str, dict[str, str]]] = []  # (place in results, broker level, new set)
        groups: list[tuple[int, str, dict[str, str]]] = []  # (place in results, group id, its new configs)
        for resource in request.resources:
            try:
                self._authorize(ctx, resource, Op.ALTER_CONFIGS)
                names = [c.name for c in resource.configs]
                if len(set(names)) != len(names):
                    raise InvalidRequest("Error due to duplicate config keys")
                if counts[(resource.resource_type, resource.resource_name)] > 1:
                    raise InvalidRequest("Each resource must appear at most once.")
                if resource.resource_type == TOPIC:
                    topic = self._topic(resource.resource_name)
                    configs = new_set(topic, resource.configs)
                    check_together(configs, self.data.base_configs)
                    if not request.validate_only:
                        changes.append((len(results), topic, configs))
                elif resource.resource_type == BROKER:
                    level, configs = self._broker_change(resource, api)
                    if not request.validate_only:
                        levels.append((len(results), level, configs))
                elif resource.resource_type == GROUP and api == ApiKey.INCREMENTAL_ALTER_CONFIGS:
                    operations: tuple[Any, ...] = resource.configs  # IncrementalAlterConfigs' (as _incremented's)
                    try:
                        configs = self.group_configs.changed(resource.resource_name, [
                            (c.name, c.config_operation, c.value) for c in operations])
                    except ConfigError as exc:
                        raise InvalidConfig(str(exc)) from None
                    if not request.validate_only:
                        groups.append((len(results), resource.resource_name, configs))
                else:
                    raise unsupported(resource.resource_type)
                results.append(self._result(resource, ErrorCode.none, None))
            except KafkaError as exc:
                results.append(self._result(resource, exc.code, str(exc) or None))

        def respond() -> object:
            return build(API_TABLE[api].responses[ctx.api_version], throttle_time=NO_THROTTLE, responses=results)

        async def after_writes() -> object:
            for place, topic, configs in changes:
                try:
                    if await self.data.catalog.set_configs(topic, configs) is None:
                        raise UnknownTopicOrPartition(f"The topic '{topic.name}' does not exist.")
                except Exception as exc:
                    results[place].update(error_code=error_code_for(exc), error_message=str(exc) or None)
            for place, level, new in levels:
                try:
                    await self.dynamic.set(level, new)
                except Exception as exc:
                    results[place].update(error_code=error_code_for(exc), error_message=str(exc) or None)
            for place, group_id, new in groups:
                try:
                    await self.group_configs.write(group_id, new)
                except Exception as exc:
                    results[place].update(error_code=error_code_for(exc), error_message=str(exc) or None)
            return respond()

        return after_writes() if changes or levels or groups else respond()

    @staticmethod
    def _replaced(topic: TopicInfo, configs: tuple[Any, ...]) -> dict[str, str]:
        """AlterConfigs: the request's set replaces the topic's overrides."""
        nulls = [c.name for c in configs if c.value is None]
        if nulls:
            raise InvalidRequest(f"Null value not supported for : {', '.join(nulls)}")
        return {c.name: check_value(c.name, c.value) for c in configs}

    @staticmethod
    def _incremented(topic: TopicInfo, configs: tuple[Any, ...]) -> dict[str, str]:
        """IncrementalAlterConfigs: the operations applied in order to the topic's overrides."""
        out = topic.config_map()
        for change in configs:
            name, op, value = change.name, change.config_operation, change.value
            if op == SET:
                out[name] = check_value(name, value)
            elif op == DELETE:
                out.pop(name, None)
            elif op in (APPEND, SUBTRACT):
                row = TOPIC_CONFIG_DEFS.get(name)
                if row is None or row.type is not ConfigType.LIST:
                    raise InvalidConfig(f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
                current = out.get(name, row.default)
                parts = [p for p in current.split(",") if p]
                for item in (value or "").split(","):
                    if op == APPEND and item not in parts:
                        parts.append(item)
                    elif op == SUBTRACT and item in parts:
                        parts.remove(item)
                out[name] = check_value(name, ",".join(parts))
            else:
                raise InvalidRequest(f"Unknown operation type {op}")
        return out

    def _broker_change(self, resource: Resource, api: ApiKey) -> tuple[str, dict[str, str]]:
        """ConfigAdminManager: the node id, the level's new set, then DynamicBrokerConfig.validate."""
        level = broker_config_changes.broker_level(resource.resource_name, self.node_id)
        if api == ApiKey.ALTER_CONFIGS:
            configs = broker_config_changes.replaced(resource.configs)
        else:
            configs = broker_config_changes.incremented(self.dynamic.get(level), resource.configs, self.config)
        return level, broker_config_changes.validated(level, configs, self.dynamic, self.config)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = ConfigsHandler(services)
    dispatcher.register(ApiKey.DESCRIBE_CONFIGS, handler.describe)
    dispatcher.register(ApiKey.ALTER_CONFIGS, handler.alter)
    dispatcher.register(ApiKey.INCREMENTAL_ALTER_CONFIGS, handler.incremental_alter)
