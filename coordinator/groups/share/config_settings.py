"""The group.share.* settings (Kafka 4.2's GroupCoordinatorConfig and ShareGroupConfig for KIP-932 groups),
the share.* group configs (GroupConfig: per-group overrides set with IncrementalAlterConfigs on a GROUP
resource), the checks Kafka makes on them, and the ShareGroupSettings they give.

The table rows have coordinator/config.py's shape (attribute, parser, default, doc); the server's Config
registers them when share groups are wired in. A group config is bounded by the broker settings:
share.session.timeout.ms by group.share.min/max.session.timeout.ms, share.heartbeat.interval.ms by
group.share.min/max.heartbeat.interval.ms, share.record.lock.duration.ms by
group.share.min/max.record.lock.duration.ms (GroupConfig.validateValues).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from coordinator.config_values import ConfigError, _int, bound_config, bounded_group_int
from coordinator.share.offset_reset import parse_offset_reset

INT32_MAX = 2**31 - 1
OFFSETS_COMMIT_TIMEOUT_MS = 5000  # Kafka's offsets.commit.timeout.ms default: the least initialize retry interval
SIMPLE_ASSIGNOR = "org.apache.kafka.coordinator.group.assignor.SimpleAssignor"


def _share_assignors(value: str) -> str:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if names != [SIMPLE_ASSIGNOR] and names != ["simple"]:
        raise ValueError(f"{value}: share groups have one assignor, {SIMPLE_ASSIGNOR}")
    return value


SHARE_GROUP_SETTINGS: dict[str, tuple[str, Any, str, str]] = {
    "group.share.session.timeout.ms": ("group_share_session_timeout_ms", _int(1, INT32_MAX), "45000",
                                       "Share groups: a member not heard from for this long is fenced."),
    "group.share.min.session.timeout.ms": ("group_share_min_session_timeout_ms", _int(1, INT32_MAX), "45000",
                                           "Smallest group.share.session.timeout.ms allowed."),
    "group.share.max.session.timeout.ms": ("group_share_max_session_timeout_ms", _int(1, INT32_MAX), "60000",
                                           "Largest group.share.session.timeout.ms allowed."),
    "group.share.heartbeat.interval.ms": ("group_share_heartbeat_interval_ms", _int(1, INT32_MAX), "5000",
                                          "Share groups: how often members are told to heartbeat."),
    "group.share.min.heartbeat.interval.ms": ("group_share_min_heartbeat_interval_ms", _int(1, INT32_MAX), "5000",
                                              "Smallest group.share.heartbeat.interval.ms allowed."),
    "group.share.max.heartbeat.interval.ms": ("group_share_max_heartbeat_interval_ms", _int(1, INT32_MAX), "15000",
                                              "Largest group.share.heartbeat.interval.ms allowed."),
    "group.share.max.size": ("group_share_max_size", _int(1, 1000), "200", "Most members a share group may have."),
    "group.share.assignors": ("group_share_assignors", _share_assignors, SIMPLE_ASSIGNOR,
                              "The share groups' assignor (Kafka's SimpleAssignor)."),
    "group.share.delivery.count.limit": ("group_share_delivery_count_limit", _int(2, 10), "5",
                                         "Deliveries of a record before it is archived."),
    "group.share.record.lock.duration.ms": ("group_share_record_lock_duration_ms", _int(1000, 3_600_000), "30000",
                                            "How long a member holds the records it acquired."),
    "group.share.min.record.lock.duration.ms": ("group_share_min_record_lock_duration_ms", _int(1000, 30_000),
                                                "15000", "Smallest share.record.lock.duration.ms a group may set."),
    "group.share.max.record.lock.duration.ms": ("group_share_max_record_lock_duration_ms",
                                                _int(30_000, 3_600_000), "60000",
                                                "Largest share.record.lock.duration.ms a group may set."),
    "group.share.partition.max.record.locks": ("group_share_partition_max_record_locks", _int(100, 10_000), "2000",
                                               "Most in-flight records of a share partition."),
    "group.share.max.share.sessions": ("group_share_max_share_sessions", _int(1, INT32_MAX), "2000",
                                       "Most share sessions a broker keeps."),
    "group.share.initialize.retry.interval.ms": (
        "group_share_initialize_retry_interval_ms", _int(1, INT32_MAX), "30000",
        "How long a share partition may stay initializing (its InitializeShareGroupState unanswered) before the "
        "next heartbeat asks again; at least offsets.commit.timeout.ms (5000), as in Kafka."),
    "share.coordinator.snapshot.update.records.per.snapshot": (
        "share_coordinator_snapshot_update_records_per_snapshot", _int(0, 500), "500",
        "ShareUpdate records of a share partition between two ShareSnapshot records."),
}


@dataclass(frozen=True, slots=True)
class ShareGroupSettings:
    """The settings a share group runs with (the broker's, with its group configs applied)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200
    delivery_count_limit: int = 5
    record_lock_duration_ms: int = 30_000
    min_record_lock_duration_ms: int = 15_000
    max_record_lock_duration_ms: int = 60_000
    min_session_timeout_ms: int = 45_000
    max_session_timeout_ms: int = 60_000
    min_heartbeat_interval_ms: int = 5_000
    max_heartbeat_interval_ms: int = 15_000
    partition_max_record_locks: int = 2000
    max_share_sessions: int = 2000
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"
    initialize_retry_interval_ms: int = 30_000


def check(config: Any) -> None:
    """GroupCoordinatorConfig's / ShareGroupConfig's requirements between the settings."""
    bound_config("group.share.session.timeout.ms", config.group_share_session_timeout_ms,
             "group.share.min.session.timeout.ms", config.group_share_min_session_timeout_ms,
             "group.share.max.session.timeout.ms", config.group_share_max_session_timeout_ms)
    bound_config("group.share.heartbeat.interval.ms", config.group_share_heartbeat_interval_ms,
             "group.share.min.heartbeat.interval.ms", config.group_share_min_heartbeat_interval_ms,
             "group.share.max.heartbeat.interval.ms", config.group_share_max_heartbeat_interval_ms)
    if config.group_share_heartbeat_interval_ms >= config.group_share_session_timeout_ms:
        raise ConfigError("group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms")
    bound_config("group.share.record.lock.duration.ms", config.group_share_record_lock_duration_ms,
             "group.share.min.record.lock.duration.ms", config.group_share_min_record_lock_duration_ms,
             "group.share.max.record.lock.duration.ms", config.group_share_max_record_lock_duration_ms)


def share_group_settings(config: Any) -> ShareGroupSettings:
    return ShareGroupSettings(
        config.group_share_session_timeout_ms, config.group_share_heartbeat_interval_ms, config.group_share_max_size,
        config.group_share_delivery_count_limit, config.group_share_record_lock_duration_ms,
        config.group_share_min_record_lock_duration_ms, config.group_share_max_record_lock_duration_ms,
        config.group_share_min_session_timeout_ms, config.group_share_max_session_timeout_ms,
        config.group_share_min_heartbeat_interval_ms, config.group_share_max_heartbeat_interval_ms,
        config.group_share_partition_max_record_locks, config.group_share_max_share_sessions,
        initialize_retry_interval_ms=max(config.group_share_initialize_retry_interval_ms, OFFSETS_COMMIT_TIMEOUT_MS))


# --- group configs (GroupConfig) --------------------------------------------------------------------

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
GROUP_CONFIG_NAMES = ("share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
                      "share.auto.offset.reset", "share.isolation.level")


def apply_group_configs(base: ShareGroupSettings, configs: Mapping[str, str]) -> ShareGroupSettings:
    """`base` with a group's share.* configs; ConfigError (Kafka's InvalidConfigurationException, answered
    INVALID_CONFIG) for an unknown name, a bad value or one outside the broker's bounds."""
    settings = base
    for name, text in configs.items():
        if name == "share.session.timeout.ms":
            settings = replace(settings, session_timeout_ms=bounded_group_int(
                name, text, "group.share.min.session.timeout.ms", base.min_session_timeout_ms,
                "group.share.max.session.timeout.ms", base.max_session_timeout_ms))
        elif name == "share.heartbeat.interval.ms":
            settings = replace(settings, heartbeat_interval_ms=bounded_group_int(
                name, text, "group.share.min.heartbeat.interval.ms", base.min_heartbeat_interval_ms,
                "group.share.max.heartbeat.interval.ms", base.max_heartbeat_interval_ms))
        elif name == "share.record.lock.duration.ms":
            settings = replace(settings, record_lock_duration_ms=bounded_group_int(
                name, text, "group.share.min.record.lock.duration.ms", base.min_record_lock_duration_ms,
                "group.share.max.record.lock.duration.ms", base.max_record_lock_duration_ms))
        elif name == "share.auto.offset.reset":
            try:
                parse_offset_reset(text)
            except ValueError as exc:
                raise ConfigError(f"Invalid value {text} for configuration {name}: {exc}") from None
            settings = replace(settings, auto_offset_reset=text)
        elif name == "share.isolation.level":
            if text not in ISOLATION_LEVELS:
                raise ConfigError(f"Invalid value {text} for configuration {name}: String must be one of: "
                                  + ", ".join(ISOLATION_LEVELS))
            settings = replace(settings, isolation_level=text)
        else:
            raise ConfigError(f"Unknown group config name: {name}")
    if settings.heartbeat_interval_ms >= settings.session_timeout_ms:
        raise ConfigError("share.session.timeout.ms must be greater than share.heartbeat.interval.ms")
    return settings
