"""AlterConfigs / IncrementalAlterConfigs on a BROKER resource, as Kafka's ConfigAdminManager
(validateBrokerConfigChange, prepareIncrementalConfigs) and DynamicBrokerConfig.validate check it.

The resource names the level: "" the cluster-wide defaults, this node's id its own configs (another
id -> INVALID_REQUEST). The level's new config set (AlterConfigs: the request's set replaces it;
IncrementalAlterConfigs: SET / DELETE / APPEND / SUBTRACT on the stored one) is then checked: a
config that cannot change at runtime -> INVALID_REQUEST "Cannot update these configs dynamically:
Set(..)"; a bad value -> INVALID_REQUEST with ConfigDef's message (Kafka wraps the
ConfigException, KAFKA-13609). The dynamic configs are data_plane/broker_configs.py's.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.config import SETTINGS, Config
from coordinator.data_plane.broker_configs import (
    CLUSTER_DEFAULT,
    DYNAMIC_LOG_CONFIGS,
    DynamicBrokerConfigs,
    broker_config_def,
)
from coordinator.data_plane.topic_config_defs import ConfigType, ConfigValueError
from coordinator.data_plane.topic_configs import check_together
from coordinator.errors import InvalidConfig, InvalidRequest
from coordinator.handlers.config_entries import broker_type

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def broker_level(name: str, node_id: int) -> str:
    """The level a BROKER resource names ("" or this node's id), or INVALID_REQUEST."""
    if name == CLUSTER_DEFAULT:
        return name
    try:
        broker = int(name)
    except ValueError:
        raise InvalidRequest(f"Node id must be an integer, but it is: {name}") from None
    if broker != node_id:
        raise InvalidRequest(f"Unexpected broker id, expected {node_id}, but received {name}")
    return str(broker)


def _kind(name: str, config: Config) -> ConfigType | None:
    if name in DYNAMIC_LOG_CONFIGS:
        return broker_config_def(name).type
    return broker_type(name, config) if name in SETTINGS else None


def replaced(configs: tuple) -> dict[str, str]:
    """AlterConfigs: the request's set is the level's new set."""
    nulls = [c.name for c in configs if c.value is None]
    if nulls:
        raise InvalidRequest(f"Null value not supported for : {', '.join(nulls)}")
    return {c.name: c.value for c in configs}


def incremented(current: Mapping[str, str], configs: tuple, config: Config) -> dict[str, str]:
    """IncrementalAlterConfigs: the operations applied in order to the level's stored set."""
    out = dict(current)
    for change in configs:
        name, op, value = change.name, change.config_operation, change.value
        if op not in OP_NAMES:
            raise InvalidRequest(f"Unknown operations type {op}")
        if op != DELETE and value is None:
            raise InvalidRequest(f"Null value not supported for : {name}")
        if op == SET:
            out[name] = value
        elif op == DELETE:
            out.pop(name, None)
        else:
            kind = _kind(name, config)
            if kind is None:
                raise InvalidConfig(f"Unknown config name: {name}")
            if kind is not ConfigType.LIST:
                raise InvalidConfig(f"Config value {OP_NAMES[op].lower()} is not allowed for config key: {name}")
            default = broker_config_def(name).default if name in DYNAMIC_LOG_CONFIGS else ""
            parts = [p for p in out.get(name, default).split(",") if p]
            items = (value or "").split(",")
            kept = [p for p in parts if p not in items]
            parts = parts + [i for i in items if i not in parts] if op == APPEND else kept
            out[name] = ",".join(parts)
    return out


def validated(level: str, configs: Mapping[str, str], dynamic: DynamicBrokerConfigs) -> dict[str, str]:
    """DynamicBrokerConfig.validate: only dynamic configs, each value valid; the canonical set."""
    static = [name for name in configs if name not in DYNAMIC_LOG_CONFIGS]
    if static:
        raise InvalidRequest(f"Cannot update these configs dynamically: Set({', '.join(static)})")
    try:
        out = {name: broker_config_def(name).parse(value) for name, value in configs.items()}
        check_together({}, dynamic.planned_base(level, out))
    except (ConfigValueError, InvalidConfig) as exc:
        raise InvalidRequest(str(exc)) from None
    return out
