"""AlterConfigs / IncrementalAlterConfigs on a BROKER resource, as Kafka's ConfigAdminManager
(validateBrokerConfigChange, prepareIncrementalConfigs) and DynamicBrokerConfig.validate check it.

The resource names the level: "" the cluster-wide defaults, this node's id its own configs (another
id -> INVALID_REQUEST). The level's new config set (AlterConfigs: the request's set replaces it;
IncrementalAlterConfigs: SET / DELETE / APPEND / SUBTRACT on the stored one) is then checked: a
config that cannot change at runtime -> INVALID_REQUEST "Cannot update these configs dynamically:
Set(..)"; a keystore or truststore config without a listener prefix, a per-broker config for "",
a bad value (ConfigDef's message: Kafka wraps the ConfigException, KAFKA-13609) or a thread pool
more than halved or doubled -> INVALID_REQUEST. The dynamic configs are data_plane/broker_configs.py's
(the log defaults) and data_plane/broker_config_defs.py's (the others).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator.config import SETTINGS, Config
from coordinator.data_plane.broker_config_defs import PER_LISTENER_ONLY, THREAD_POOLS, per_broker
from coordinator.data_plane.broker_configs import CLUSTER_DEFAULT, DynamicBrokerConfigs, broker_config_def, is_dynamic
from coordinator.data_plane.topic_config_defs import ConfigType, ConfigValueError
from coordinator.data_plane.topic_configs import check_together
from coordinator.errors import InvalidConfig, InvalidRequest
from coordinator.handlers.config_entries import broker_type
from coordinator.net.connection_quotas import connection_limits

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
    if is_dynamic(name):
        return broker_config_def(name).type
    return broker_type(name, config) if name in SETTINGS else None


def replaced(configs: tuple[Any, ...]) -> dict[str, str]:  # kio's AlterConfigs entries
    """AlterConfigs: the request's set is the level's new set."""
    nulls = [c.name for c in configs if c.value is None]
    if nulls:
        raise InvalidRequest(f"Null value not supported for : {', '.join(nulls)}")
    return {c.name: c.value for c in configs}


def incremented(current: Mapping[str, str], configs: tuple[Any, ...],  # kio's IncrementalAlterConfigs entries
                config: Config) -> dict[str, str]:
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
            default = broker_config_def(name).default if is_dynamic(name) else ""
            parts = [p for p in out.get(name, default).split(",") if p]
            items = (value or "").split(",")
            kept = [p for p in parts if p not in items]
            parts = parts + [i for i in items if i not in parts] if op == APPEND else kept
            out[name] = ",".join(parts)
    return out


def _refuse(names: list[str], message: str) -> None:
    if names:
        raise InvalidRequest(f"{message}: Set({', '.join(names)})")


def validated(level: str, configs: Mapping[str, str], dynamic: DynamicBrokerConfigs,
              config: Config) -> dict[str, str]:
    """DynamicBrokerConfig.validateConfigs, then the checks of its reconfigurables: only dynamic configs; the
    keystores and truststores only under a listener prefix; each value valid for its type; the per-broker ones
    only for a node id; then the checks across configs. The canonical set."""
    _refuse([name for name in configs if not is_dynamic(name)], "Cannot update these configs dynamically")
    _refuse([name for name in configs if name in PER_LISTENER_ONLY],
            "These security configs can be dynamically updated only per-listener using the listener prefix")
    try:
        out = {name: broker_config_def(name).parse(value) for name, value in configs.items()}
    except ConfigValueError as exc:
        raise InvalidRequest(str(exc)) from None
    if level == CLUSTER_DEFAULT:
        _refuse([name for name in configs if per_broker(name)],
                "Cannot update these configs at default cluster level, broker id must be specified")
    try:
        check_together({}, dynamic.planned_base(level, out))
        _check_reconfiguration(level, out, dynamic, config)
    except (ValueError, InvalidConfig) as exc:
        raise InvalidRequest(str(exc)) from None
    return out


def _check_reconfiguration(level: str, configs: Mapping[str, str], dynamic: DynamicBrokerConfigs,
                           config: Config) -> None:
    """What Kafka's reconfigurables check of the node's new values: a thread pool may at most halve or double
    (DynamicThreadPool), max.connections.per.ip 0 needs overrides and the overrides must parse (KafkaConfig)."""
    for name in THREAD_POOLS:
        new, old = dynamic.planned_value(level, configs, name), dynamic.value(name)
        if new is None or new == old:
            continue
        value, current = int(new), int(old if old is not None else broker_config_def(name).default)
        problem = ("value should be at least half the current value" if value < current // 2 else
                   "value should not be greater than double the current value" if value > current * 2 else None)
        if problem is not None:
            raise ValueError(f"Dynamic thread count update validation failed for {name}={value}, {problem} {current}")
    limits = connection_limits(config, lambda name: dynamic.planned_value(level, configs, name))
    if limits.per_ip == 0 and not limits.overrides:
        raise ValueError("max.connections.per.ip: 0 needs max.connections.per.ip.overrides (Kafka refuses it too)")
