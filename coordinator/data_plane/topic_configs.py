"""The topic-level configs CreateTopics accepts, with Kafka's names, defaults and checks.

Kafka answers an unknown topic config name, or a value that does not parse, with
INVALID_CONFIG (LogConfig.validate). We accept the subset below, all enforced:
segment.bytes, max.message.bytes, message.timestamp.type (and the record timestamp bounds
message.timestamp.before.max.ms / after.max.ms / difference.max.ms: record_rules.py), and retention.ms,
retention.bytes, cleanup.policy, delete.retention.ms and min.cleanable.dirty.ratio
(retention and compaction: docs/DATA_PLANE.md). The defaults come from the broker
settings (log.retention.*, log.cleanup.policy, log.segment.bytes, message.max.bytes)
or are Kafka's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from coordinator.config import parse_cleanup_policy
from coordinator.data_plane.record_rules import RecordRules
from coordinator.errors import InvalidConfig
from storage.log_compaction import CompactionPolicy
from storage.retention_rules import RetentionPolicy

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _int(low: int, high: int) -> Callable[[str], str]:
    def check(text: str) -> str:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise ValueError(f"value {value} is outside [{low}, {high}]")
        return str(value)

    return check


def _ratio(text: str) -> str:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"value {value} is outside [0, 1]")
    return str(value)


def _timestamp_type(text: str) -> str:
    if text.strip() not in ("CreateTime", "LogAppendTime"):
        raise ValueError(f"{text!r} is not CreateTime or LogAppendTime")
    return text.strip()


@dataclass(frozen=True)
class ConfigSpec:
    check: Callable[[str], str]
    enforced: bool


# name -> spec. Defaults come from the broker settings (see `defaults`).
TOPIC_CONFIGS: dict[str, ConfigSpec] = {
    "cleanup.policy": ConfigSpec(parse_cleanup_policy, enforced=True),
    "retention.ms": ConfigSpec(_int(-1, INT64_MAX), enforced=True),
    "retention.bytes": ConfigSpec(_int(-1, INT64_MAX), enforced=True),
    "delete.retention.ms": ConfigSpec(_int(0, INT64_MAX), enforced=True),
    "min.cleanable.dirty.ratio": ConfigSpec(_ratio, enforced=True),
    "segment.bytes": ConfigSpec(_int(14, INT32_MAX), enforced=True),
    "max.message.bytes": ConfigSpec(_int(0, INT32_MAX), enforced=True),
    "message.timestamp.type": ConfigSpec(_timestamp_type, enforced=True),
    "message.timestamp.before.max.ms": ConfigSpec(_int(0, INT64_MAX), enforced=True),
    "message.timestamp.after.max.ms": ConfigSpec(_int(0, INT64_MAX), enforced=True),
    "message.timestamp.difference.max.ms": ConfigSpec(_int(0, INT64_MAX), enforced=True),  # deprecated in Kafka
}


def defaults(segment_bytes: int, message_max_bytes: int, retention_ms: int = 604800000,
             retention_bytes: int = -1, cleanup_policy: str = "delete") -> dict[str, str]:
    """Each supported config's value when a topic does not set it (the broker settings)."""
    return {
        "cleanup.policy": cleanup_policy,
        "retention.ms": str(retention_ms),
        "retention.bytes": str(retention_bytes),
        "delete.retention.ms": "86400000",
        "min.cleanable.dirty.ratio": "0.5",
        "segment.bytes": str(segment_bytes),
        "max.message.bytes": str(message_max_bytes),
        "message.timestamp.type": "CreateTime",
        "message.timestamp.before.max.ms": str(INT64_MAX),
        "message.timestamp.after.max.ms": str(INT64_MAX),
        "message.timestamp.difference.max.ms": str(INT64_MAX),
    }


def validate(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Normalized topic overrides, or InvalidConfig naming the first bad entry."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        spec = TOPIC_CONFIGS.get(name)
        if spec is None:
            raise InvalidConfig(f"Unknown topic config name: {name}")
        if value is None:
            raise InvalidConfig(f"Null value not supported for topic configs: {name}")
        try:
            out[name] = spec.check(value)
        except ValueError as exc:
            raise InvalidConfig(f"Invalid value {value} for configuration {name}: {exc}") from None
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
        # LogConfig.getMessageTimestampBeforeMaxMs / AfterMaxMs: the deprecated difference when left at default
        before, after = (int(merged[f"message.timestamp.{edge}.max.ms"]) for edge in ("before", "after"))
        rules = RecordRules(compaction is not None, difference if before == INT64_MAX else before,
                            difference if after == INT64_MAX else after)
        return cls(int(merged["segment.bytes"]), int(merged["max.message.bytes"]),
                   merged["message.timestamp.type"] == "LogAppendTime", retention, compaction, rules)
