"""Validation and defaults of topic configs; EffectiveConfig, what the data plane enforces.

Every topic config Kafka defines is accepted (the table: topic_config_defs.py) and validated
as LogConfig.validate does: an unknown name, a value of the wrong type or out of range ->
INVALID_CONFIG with Kafka's message. The data plane enforces segment.bytes,
max.message.bytes, message.timestamp.type, retention.ms, retention.bytes, cleanup.policy,
delete.retention.ms and min.cleanable.dirty.ratio (docs/DATA_PLANE.md); the others are
stored and described; the record timestamp bounds message.timestamp.before.max.ms /
after.max.ms / difference.max.ms and keys on compacted topics are checked per record
(record_rules.py). The defaults come from the broker settings (log.retention.*,
log.cleanup.policy, log.segment.bytes, message.max.bytes) or are Kafka's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from coordinator.data_plane.record_rules import RecordRules
from coordinator.data_plane.topic_config_defs import INT64_MAX, TOPIC_CONFIG_DEFS, ConfigValueError
from coordinator.errors import InvalidConfig
from storage.log_compaction import CompactionPolicy
from storage.retention_rules import RetentionPolicy

TIERED_STORAGE_DISABLED = ("Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
                           "with remote log storage.")


def defaults(segment_bytes: int, message_max_bytes: int, retention_ms: int = 604800000,
             retention_bytes: int = -1, cleanup_policy: str = "delete") -> dict[str, str]:
    """Each topic config's value when a topic does not set it (the broker settings, else Kafka's)."""
    out = {name: row.default for name, row in TOPIC_CONFIG_DEFS.items()}
    out.update({
        "cleanup.policy": cleanup_policy,
        "retention.ms": str(retention_ms),
        "retention.bytes": str(retention_bytes),
        "segment.bytes": str(segment_bytes),
        "max.message.bytes": str(message_max_bytes),
    })
    return out


def check_value(name: str, value: str | None) -> str:
    """One config's canonical value, or InvalidConfig (unknown name, null, bad value)."""
    row = TOPIC_CONFIG_DEFS.get(name)
    if row is None:
        raise InvalidConfig(f"Unknown topic config name: {name}")
    if value is None:
        raise InvalidConfig(f"Null value not supported for topic configs: {name}")
    try:
        return row.parse(value)
    except ConfigValueError as exc:
        raise InvalidConfig(str(exc)) from None


def check_together(configs: Mapping[str, str], base: Mapping[str, str] | None = None) -> None:
    """LogConfig.validateValues: the checks across configs (on the merged values)."""
    merged = {**(base or defaults(1 << 30, 1048588)), **configs}
    low, high = int(merged["min.compaction.lag.ms"]), int(merged["max.compaction.lag.ms"])
    if low > high:
        raise InvalidConfig(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                            f"max.compaction.lag.ms ({high})")
    if configs.get("remote.storage.enable") == "true":
        raise InvalidConfig(TIERED_STORAGE_DISABLED)


def validate(configs: Mapping[str, str | None], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Normalized topic overrides, or InvalidConfig naming the first bad entry."""
    out = {name: check_value(name, value) for name, value in configs.items()}
    check_together(out, base)
    return out


@dataclass(frozen=True)
class EffectiveConfig:
    """The enforced values of one topic, resolved once when its logs open."""

    segment_bytes: int
    max_message_bytes: int
    log_append_time: bool
    retention: RetentionPolicy
    compaction: CompactionPolicy | None  # None unless cleanup.policy has compact
    rules: RecordRules = RecordRules()  # the per-record checks (keys on compacted topics, timestamps)

    @classmethod
    def resolve(cls, overrides: Mapping[str, str], base: Mapping[str, str]) -> EffectiveConfig:
        merged = {**base, **overrides}
        policies = merged["cleanup.policy"].split(",")
        retention = RetentionPolicy(int(merged["retention.ms"]), int(merged["retention.bytes"]), "delete" in policies)
        compaction = CompactionPolicy(int(merged["delete.retention.ms"]), float(merged["min.cleanable.dirty.ratio"])) \
            if "compact" in policies else None
        difference = int(merged["message.timestamp.difference.max.ms"])
        # LogConfig.getMessageTimestampBeforeMaxMs / AfterMaxMs: the deprecated difference when left at Long.MAX
        before, after = (int(merged[f"message.timestamp.{edge}.max.ms"]) for edge in ("before", "after"))
        rules = RecordRules(compaction is not None, difference if before == INT64_MAX else before,
                            difference if after == INT64_MAX else after)
        return cls(int(merged["segment.bytes"]), int(merged["max.message.bytes"]),
                   merged["message.timestamp.type"] == "LogAppendTime", retention, compaction, rules)
