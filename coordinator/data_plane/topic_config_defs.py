"""Every topic config Kafka 3.9/4.0 defines (TopicConfig / LogConfig), as one table.

A row holds the name, the ConfigDef type, Kafka's default, the validator, the documentation
string DescribeConfigs returns, the broker settings that supply the default (Kafka's
ServerTopicConfigSynonyms, most specific first) and whether this server's data plane applies
the value. Values that are not applied are still validated and stored, so DescribeConfigs
returns them and clients that set them (Kafka Streams, Connect, operators' scripts) work.

Errors are Kafka's ConfigException texts ("Invalid value x for configuration y: reason"),
answered as INVALID_CONFIG; `parse` returns the value in Kafka's canonical text form
(ConfigDef.convertToString: trimmed numbers, lists joined with ",").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class ConfigType(IntEnum):
    """DescribeConfigs v3+ config_type ids (DescribeConfigsResponse.ConfigType)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigValueError(ValueError):
    """Kafka's ConfigException: the message is the whole answer text."""

    def __init__(self, name: str, value: str, reason: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {name}: {reason}")


Validator = Callable[[object], str | None]  # the parsed value -> why it is refused, or None


def parse_typed(kind: ConfigType, text: str) -> object:
    """ConfigDef.parseType for a string value; ValueError carries Kafka's reason."""
    trimmed = text.strip()
    if kind in (ConfigType.INT, ConfigType.LONG, ConfigType.SHORT):
        try:
            value = int(trimmed)
        except ValueError:
            raise ValueError(f"Not a number of type {kind.name}") from None
        low, high = {ConfigType.INT: (INT32_MIN, INT32_MAX), ConfigType.LONG: (INT64_MIN, INT64_MAX),
                     ConfigType.SHORT: (-(2**15), 2**15 - 1)}[kind]
        if not low <= value <= high:
            raise ValueError(f"Not a number of type {kind.name}")
        return value
    if kind is ConfigType.DOUBLE:
        try:
            return float(trimmed)
        except ValueError:
            raise ValueError("Not a number of type DOUBLE") from None
    if kind is ConfigType.BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise ValueError("Expected value to be either true or false")
    if kind is ConfigType.LIST:
        return [part.strip() for part in trimmed.split(",")] if trimmed else []
    return trimmed


def to_text(kind: ConfigType, value: object) -> str:
    """ConfigDef.convertToString."""
    if kind is ConfigType.LIST:
        return ",".join(value)  # type: ignore[arg-type]
    if kind is ConfigType.BOOLEAN:
        return "true" if value else "false"
    return str(value)


def at_least(low: float) -> Validator:
    return lambda v: None if v >= low else f"Value must be at least {low}"  # type: ignore[operator]


def between(low: float, high: float) -> Validator:
    def check(v: object) -> str | None:
        if v < low:  # type: ignore[operator]
            return f"Value must be no less than {low}"
        if v > high:  # type: ignore[operator]
            return f"Value must be no more than {high}"
        return None

    return check


def one_of(*choices: str) -> Validator:
    return lambda v: None if v in choices else f"String must be one of: {', '.join(choices)}"


def list_of(*choices: str) -> Validator:
    """ValidList.in, as cleanup.policy uses it (this server also refuses an empty list: a topic
    must be compacted, deleted, or both)."""
    def check(values: object) -> str | None:
        items = list(values)  # type: ignore[call-overload]
        if not items:
            return "Empty list is not supported"
        bad = [v for v in items if v not in choices]
        return f"String must be one of: {', '.join(choices)}" if bad else None

    return check


def level(low: int, high: int, default: int | None = None) -> Validator:
    """The compression level validators (GzipCompression.LevelValidator and friends)."""
    def check(v: object) -> str | None:
        if v == default or low <= v <= high:  # type: ignore[operator]
            return None
        extra = f", or {default}" if default is not None else ""
        return f"Value must be between {low} and {high}{extra}"

    return check


_REPLICA = re.compile(r"^\d+:\d+$")


def throttled_replicas(name: str) -> Validator:
    """ThrottledReplicaListValidator: '*' or partition:broker pairs."""
    def check(values: object) -> str | None:
        items = list(values)  # type: ignore[call-overload]
        if items == ["*"] or all(_REPLICA.match(item) for item in items):
            return None
        return (f"{name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...")

    return check


# Kafka 3.9's MetadataVersion: each release and how many inter-broker protocol versions (IV0, IV1, ...) it has
# (0: none, the release alone, as 0.8.0 - 0.9.0)
_RELEASES = {"0.8.0": 0, "0.8.1": 0, "0.8.2": 0, "0.9.0": 0, "0.10.0": 2, "0.10.1": 3, "0.10.2": 1, "0.11.0": 3,
             "1.0": 1, "1.1": 1, "2.0": 2, "2.1": 3, "2.2": 2, "2.3": 2, "2.4": 2, "2.5": 1, "2.6": 1, "2.7": 3,
             "2.8": 2, "3.0": 2, "3.1": 1, "3.2": 1, "3.3": 4, "3.4": 1, "3.5": 3, "3.6": 3, "3.7": 5, "3.8": 1,
             "3.9": 1}
METADATA_VERSIONS = frozenset(
    [*_RELEASES, *(f"{release}-IV{i}" for release, count in _RELEASES.items() for i in range(count))])


def metadata_version(v: object) -> str | None:
    """Kafka's MetadataVersionValidator (MetadataVersion.fromVersionString): a release ("2.8"), an
    inter-broker protocol version ("2.8-IV1"), or a longer version whose release is known ("0.10.0.1",
    "2.8.2": the first three parts of a 0.x version are its release, else the first two)."""
    text = str(v)
    parts = text.split(".")
    keep = 3 if text.startswith("0.") else 2
    key = text if keep >= len(parts) else ".".join(parts[:keep])
    return None if key in METADATA_VERSIONS else f"Version {text} is not a valid version"


def no_check(_v: object) -> str | None:
    return None


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    type: ConfigType
    default: str
    validator: Validator
    doc: str
    synonyms: tuple[str, ...] = ()  # broker settings giving the default, most specific first
    applied: bool = False  # the data plane enforces it

    def parse(self, text: str) -> str:
        """The canonical text of a valid value, or ConfigValueError."""
        try:
            value = parse_typed(self.type, text)
        except ValueError as exc:
            raise ConfigValueError(self.name, text, str(exc)) from None
        reason = self.validator(value)
        if reason is not None:
            raise ConfigValueError(self.name, text, reason)
        return to_text(self.type, value)


C = ConfigType
_MAX = str(INT64_MAX)
_ROWS: tuple[TopicConfigDef, ...] = (
    TopicConfigDef("cleanup.policy", C.LIST, "delete", list_of("compact", "delete"),
                   "A string that is either \"delete\" or \"compact\" or both. This string designates the retention "
                   "policy to use on old log segments.", ("log.cleanup.policy",), applied=True),
    TopicConfigDef("compression.type", C.STRING, "producer",
                   one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
                   "Specify the final compression type for a given topic. (Stored; this server keeps the "
                   "producer's compression.)", ("compression.type",)),
    TopicConfigDef("compression.gzip.level", C.INT, "-1", level(1, 9, -1),
                   "The compression level to use if compression.type is set to gzip.", ("compression.gzip.level",)),
    TopicConfigDef("compression.lz4.level", C.INT, "9", level(1, 17),
                   "The compression level to use if compression.type is set to lz4.", ("compression.lz4.level",)),
    TopicConfigDef("compression.zstd.level", C.INT, "3", level(-131072, 22),
                   "The compression level to use if compression.type is set to zstd.", ("compression.zstd.level",)),
    TopicConfigDef("delete.retention.ms", C.LONG, "86400000", at_least(0),
                   "The amount of time to retain delete tombstone markers for log compacted topics.",
                   ("log.cleaner.delete.retention.ms",), applied=True),
    TopicConfigDef("file.delete.delay.ms", C.LONG, "60000", at_least(0),
                   "The time to wait before deleting a file from the filesystem.",
                   ("log.segment.delete.delay.ms",)),
    TopicConfigDef("flush.messages", C.LONG, _MAX, at_least(1),
                   "The number of messages written to a log partition before we force an fsync on the log. "
                   "(Stored; this server's log.flush.policy decides.)", ("log.flush.interval.messages",)),
    TopicConfigDef("flush.ms", C.LONG, _MAX, at_least(0),
                   "The maximum time a message can sit in a log before we force an fsync. (Stored; this "
                   "server's log.flush.policy decides.)"),
    TopicConfigDef("follower.replication.throttled.replicas", C.LIST, "",
                   throttled_replicas("follower.replication.throttled.replicas"),
                   "A list of replicas for which log replication should be throttled on the follower side.",
                   ("follower.replication.throttled.replicas",)),
    TopicConfigDef("index.interval.bytes", C.INT, "4096", at_least(0),
                   "How frequently Kafka adds an index entry to its offset index.", ("log.index.interval.bytes",)),
    TopicConfigDef("leader.replication.throttled.replicas", C.LIST, "",
                   throttled_replicas("leader.replication.throttled.replicas"),
                   "A list of replicas for which log replication should be throttled on the leader side.",
                   ("leader.replication.throttled.replicas",)),
    TopicConfigDef("local.retention.bytes", C.LONG, "-2", at_least(-2),
                   "The maximum size of local log segments that can grow for a partition before it deletes the "
                   "old segments (tiered storage).", ("log.local.retention.bytes",)),
    TopicConfigDef("local.retention.ms", C.LONG, "-2", at_least(-2),
                   "The number of milliseconds to keep the local log segment before it gets deleted (tiered "
                   "storage).", ("log.local.retention.ms",)),
    TopicConfigDef("max.compaction.lag.ms", C.LONG, _MAX, at_least(1),
                   "The maximum time a message will remain ineligible for compaction in the log.",
                   ("log.cleaner.max.compaction.lag.ms",)),
    TopicConfigDef("max.message.bytes", C.INT, "1048588", at_least(0),
                   "The largest record batch size allowed by Kafka (after compression if compression is enabled).",
                   ("message.max.bytes",), applied=True),
    TopicConfigDef("message.downconversion.enable", C.BOOLEAN, "true", no_check,
                   "This configuration controls whether down-conversion of message formats is enabled to satisfy "
                   "consume requests. (Stored; this server never down-converts: it serves no Fetch version that "
                   "would need it.)", ("log.message.downconversion.enable",)),
    TopicConfigDef("message.format.version", C.STRING, "3.0-IV1", metadata_version,
                   "[DEPRECATED] Specify the message format version the broker will use to append messages to the "
                   "logs. The value of this config is always assumed to be `3.0` if `inter.broker.protocol.version` "
                   "is 3.0 or higher (the actual config value is ignored).", ("log.message.format.version",)),
    TopicConfigDef("message.timestamp.after.max.ms", C.LONG, _MAX, at_least(0),  # Kafka 3.9 (4.0: 3600000)
                   "The maximum allowed timestamp difference between the message timestamp and the broker's "
                   "timestamp, for timestamps later than the broker's.", ("log.message.timestamp.after.max.ms",)),
    TopicConfigDef("message.timestamp.before.max.ms", C.LONG, _MAX, at_least(0),
                   "The maximum allowed timestamp difference between the broker's timestamp and the message "
                   "timestamp, for timestamps earlier than the broker's.", ("log.message.timestamp.before.max.ms",)),
    TopicConfigDef("message.timestamp.difference.max.ms", C.LONG, _MAX, at_least(0),
                   "[DEPRECATED] The maximum difference allowed between the timestamp when a broker receives a "
                   "message and the timestamp specified in the message.",
                   ("log.message.timestamp.difference.max.ms",)),
    TopicConfigDef("message.timestamp.type", C.STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
                   "Define whether the timestamp in the message is message create time or log append time.",
                   ("log.message.timestamp.type",), applied=True),
    TopicConfigDef("min.cleanable.dirty.ratio", C.DOUBLE, "0.5", between(0, 1),
                   "This configuration controls how frequently the log compactor will attempt to clean the log.",
                   ("log.cleaner.min.cleanable.ratio",), applied=True),
    TopicConfigDef("min.compaction.lag.ms", C.LONG, "0", at_least(0),
                   "The minimum time a message will remain uncompacted in the log.",
                   ("log.cleaner.min.compaction.lag.ms",)),
    TopicConfigDef("min.insync.replicas", C.INT, "1", at_least(1),
                   "The minimum number of replicas that must acknowledge a write for acks=all to succeed.",
                   ("min.insync.replicas",)),
    TopicConfigDef("preallocate", C.BOOLEAN, "false", no_check,
                   "True if we should preallocate the file on disk when creating a new log segment.",
                   ("log.preallocate",)),
    TopicConfigDef("remote.log.copy.disable", C.BOOLEAN, "false", no_check,
                   "Determines whether tiered data for a topic should become read only."),
    TopicConfigDef("remote.log.delete.on.disable", C.BOOLEAN, "false", no_check,
                   "Determines whether tiered data for a topic should be deleted after tiered storage is "
                   "disabled on a topic."),
    TopicConfigDef("remote.storage.enable", C.BOOLEAN, "false", no_check,
                   "To enable tiered storage for a topic, set this configuration as true."),
    TopicConfigDef("retention.bytes", C.LONG, "-1", no_check,
                   "This configuration controls the maximum size a partition can grow to before we will discard "
                   "old log segments.", ("log.retention.bytes",), applied=True),
    TopicConfigDef("retention.ms", C.LONG, "604800000", at_least(-1),
                   "This configuration controls the maximum time we will retain a log before we will discard old "
                   "log segments. -1: no time limit.",
                   ("log.retention.ms", "log.retention.minutes", "log.retention.hours"), applied=True),
    TopicConfigDef("segment.bytes", C.INT, "1073741824", at_least(14),
                   "This configuration controls the segment file size for the log.", ("log.segment.bytes",),
                   applied=True),
    TopicConfigDef("segment.index.bytes", C.INT, "10485760", at_least(4),
                   "This configuration controls the size of the index that maps offsets to file positions.",
                   ("log.index.size.max.bytes",)),
    TopicConfigDef("segment.jitter.ms", C.LONG, "0", at_least(0),
                   "The maximum random jitter subtracted from the scheduled segment roll time.",
                   ("log.roll.jitter.ms", "log.roll.jitter.hours")),
    TopicConfigDef("segment.ms", C.LONG, "604800000", at_least(1),
                   "This configuration controls the period of time after which Kafka will force the log to roll "
                   "even if the segment file isn't full.", ("log.roll.ms", "log.roll.hours")),
    TopicConfigDef("unclean.leader.election.enable", C.BOOLEAN, "false", no_check,
                   "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last "
                   "resort.", ("unclean.leader.election.enable",)),
)

TOPIC_CONFIG_DEFS: dict[str, TopicConfigDef] = {row.name: row for row in _ROWS}
