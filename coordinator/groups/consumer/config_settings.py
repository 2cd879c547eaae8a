"""The group.consumer.* settings (Kafka's GroupCoordinatorConfig for KIP-848 groups): their table rows for
coordinator/config.py, the checks Kafka makes between them, and the ConsumerGroupSettings they give."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from coordinator.config_values import ConfigError, _int, bounded_group_int
from coordinator.groups.consumer.assignors import assignors_from_config
from coordinator.groups.consumer.params import ConsumerGroupSettings

INT32_MAX = 2**31 - 1
DEFAULT_ASSIGNORS = ("org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
                     "org.apache.kafka.coordinator.group.assignor.RangeAssignor")


def _assignors(value: str) -> str:
    assignors_from_config(value)  # ValueError names an unknown one
    return value


#: ConsumerGroupMigrationPolicy, in Kafka's order
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


def _migration_policy(value: str) -> str:
    """ConfigDef.CaseInsensitiveValidString: any case, no trimming."""
    policy = value.lower()
    if policy not in MIGRATION_POLICIES:
        raise ValueError(f"{value} is not one of {', '.join(MIGRATION_POLICIES)} (case-insensitive)")
    return policy


CONSUMER_GROUP_SETTINGS: dict[str, tuple[str, Any, str, str]] = {
    "group.consumer.session.timeout.ms": ("group_consumer_session_timeout_ms", _int(1, INT32_MAX), "45000",
                                          "KIP-848 groups: a member not heard from for this long is fenced."),
    "group.consumer.min.session.timeout.ms": ("group_consumer_min_session_timeout_ms", _int(1, INT32_MAX),
                                              "45000", "Smallest group.consumer.session.timeout.ms allowed."),
    "group.consumer.max.session.timeout.ms": ("group_consumer_max_session_timeout_ms", _int(1, INT32_MAX),
                                              "60000", "Largest group.consumer.session.timeout.ms allowed."),
    "group.consumer.heartbeat.interval.ms": ("group_consumer_heartbeat_interval_ms", _int(1, INT32_MAX), "5000",
                                             "KIP-848 groups: how often members are told to heartbeat."),
    "group.consumer.min.heartbeat.interval.ms": ("group_consumer_min_heartbeat_interval_ms", _int(1, INT32_MAX),
                                                 "5000", "Smallest group.consumer.heartbeat.interval.ms allowed."),
    "group.consumer.max.heartbeat.interval.ms": ("group_consumer_max_heartbeat_interval_ms", _int(1, INT32_MAX),
                                                 "15000", "Largest group.consumer.heartbeat.interval.ms allowed."),
    "group.consumer.max.size": ("group_consumer_max_size", _int(1, INT32_MAX), str(INT32_MAX),
                                "Most members a KIP-848 consumer group may have."),
    "group.consumer.assignors": ("group_consumer_assignors", _assignors, DEFAULT_ASSIGNORS,
                                 "Server-side assignors (Kafka class names or uniform, range); the first is the "
                                 "default."),
    "group.consumer.migration.policy": ("group_consumer_migration_policy", _migration_policy, "bidirectional",
                                        "Online migration between classic and consumer groups: bidirectional, "
                                        "upgrade, downgrade or disabled."),
}


def check(config: Any) -> None:
    """GroupCoordinatorConfig's requirements between the settings."""
    def between(name: str, value: int, low_name: str, low: int, high_name: str, high: int) -> None:
        if value < low:
            raise ConfigError(f"{name}: {value} is less than {low_name} ({low})")
        if value > high:
            raise ConfigError(f"{name}: {value} is greater than {high_name} ({high})")

    between("group.consumer.session.timeout.ms", config.group_consumer_session_timeout_ms,
            "group.consumer.min.session.timeout.ms", config.group_consumer_min_session_timeout_ms,
            "group.consumer.max.session.timeout.ms", config.group_consumer_max_session_timeout_ms)
    between("group.consumer.heartbeat.interval.ms", config.group_consumer_heartbeat_interval_ms,
            "group.consumer.min.heartbeat.interval.ms", config.group_consumer_min_heartbeat_interval_ms,
            "group.consumer.max.heartbeat.interval.ms", config.group_consumer_max_heartbeat_interval_ms)
    if config.group_consumer_heartbeat_interval_ms >= config.group_consumer_session_timeout_ms:
        raise ConfigError(f"group.consumer.heartbeat.interval.ms: {config.group_consumer_heartbeat_interval_ms} "
                          "must be less than group.consumer.session.timeout.ms "
                          f"({config.group_consumer_session_timeout_ms})")


def consumer_group_settings(config: Any) -> ConsumerGroupSettings:
    assignors = assignors_from_config(config.group_consumer_assignors)
    return ConsumerGroupSettings(config.group_consumer_session_timeout_ms, config.group_consumer_heartbeat_interval_ms,
                                 config.group_consumer_max_size, {a.name: a for a in assignors},
                                 config.group_consumer_migration_policy,
                                 topics_authorized=bool(config.authorizer_class_name))


# --- group configs (GroupConfig's consumer.* overrides, set with IncrementalAlterConfigs on a GROUP resource) ---

CONSUMER_GROUP_CONFIG_NAMES = ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")


@dataclass(frozen=True, slots=True)
class ConsumerTiming:
    """A consumer group's session timeout and heartbeat interval, and the broker's bounds on them."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    min_session_timeout_ms: int = 45_000
    max_session_timeout_ms: int = 60_000
    min_heartbeat_interval_ms: int = 5_000
    max_heartbeat_interval_ms: int = 15_000


def consumer_timing(config: Any) -> ConsumerTiming:
    return ConsumerTiming(config.group_consumer_session_timeout_ms, config.group_consumer_heartbeat_interval_ms,
                          config.group_consumer_min_session_timeout_ms, config.group_consumer_max_session_timeout_ms,
                          config.group_consumer_min_heartbeat_interval_ms,
                          config.group_consumer_max_heartbeat_interval_ms)


def apply_consumer_group_configs(base: ConsumerTiming, configs: Mapping[str, str]) -> ConsumerTiming:
    """`base` with a group's consumer.* configs; ConfigError (INVALID_CONFIG) for a bad value or one outside the
    broker's group.consumer.min/max bounds (GroupConfig.validateValues' messages)."""
    timing = base
    for name, text in configs.items():
        if name == "consumer.session.timeout.ms":
            timing = replace(timing, session_timeout_ms=bounded_group_int(
                name, text, "group.consumer.min.session.timeout.ms", base.min_session_timeout_ms,
                "group.consumer.max.session.timeout.ms", base.max_session_timeout_ms))
        elif name == "consumer.heartbeat.interval.ms":
            timing = replace(timing, heartbeat_interval_ms=bounded_group_int(
                name, text, "group.consumer.min.heartbeat.interval.ms", base.min_heartbeat_interval_ms,
                "group.consumer.max.heartbeat.interval.ms", base.max_heartbeat_interval_ms))
        else:
            raise ConfigError(f"Unknown group config name: {name}")
    if timing.session_timeout_ms <= timing.heartbeat_interval_ms:
        raise ConfigError("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
    return timing
