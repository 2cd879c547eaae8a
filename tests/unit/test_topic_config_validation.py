"""Topic config validation as Kafka's LogConfig: every config accepted, type/range/choice errors
with Kafka's ConfigException texts (INVALID_CONFIG)."""

from __future__ import annotations

import pytest

from coordinator.data_plane import topic_configs
from coordinator.data_plane.topic_config_defs import TOPIC_CONFIG_DEFS
from coordinator.errors import InvalidConfig

KAFKA_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.compaction.lag.ms", "max.message.bytes", "message.downconversion.enable", "message.timestamp.type",
    "message.timestamp.before.max.ms", "message.timestamp.after.max.ms", "message.timestamp.difference.max.ms",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
    "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable", "compression.gzip.level",
    "compression.lz4.level", "compression.zstd.level",
}


def test_every_kafka_topic_config_is_in_the_table_and_its_default_is_valid():
    assert KAFKA_TOPIC_CONFIGS <= set(TOPIC_CONFIG_DEFS)
    for name, row in TOPIC_CONFIG_DEFS.items():
        if name != "remote.storage.enable":
            assert row.doc
        row.parse(row.default)  # Kafka's default passes its own validator


def test_values_are_normalized():
    assert topic_configs.validate({
        "segment.ms": " 3600000 ", "cleanup.policy": "compact, delete", "preallocate": "TRUE",
        "compression.type": "zstd", "min.insync.replicas": "2", "compression.gzip.level": "-1",
        "leader.replication.throttled.replicas": "0:1,1:1", "follower.replication.throttled.replicas": "*",
        "min.cleanable.dirty.ratio": "0.25", "message.timestamp.type": "LogAppendTime",
    }) == {"segment.ms": "3600000", "cleanup.policy": "compact,delete", "preallocate": "true",
           "compression.type": "zstd", "min.insync.replicas": "2", "compression.gzip.level": "-1",
           "leader.replication.throttled.replicas": "0:1,1:1", "follower.replication.throttled.replicas": "*",
           "min.cleanable.dirty.ratio": "0.25", "message.timestamp.type": "LogAppendTime"}


@pytest.mark.parametrize("name, value, message", [
    ("retention.ms", "abc", "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ("segment.bytes", "3000000000", "Invalid value 3000000000 for configuration segment.bytes: "
                                    "Not a number of type INT"),
    ("retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ("segment.ms", "0", "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
    ("min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or "
                           "false"),
    ("compression.type", "brotli", "Invalid value brotli for configuration compression.type: String must be one "
                                   "of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("cleanup.policy", "compact,keep", "Invalid value compact,keep for configuration cleanup.policy: String must "
                                       "be one of: compact, delete"),
    ("min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: "
                                         "Value must be no more than 1"),
    ("compression.gzip.level", "10", "Invalid value 10 for configuration compression.gzip.level: "
                                     "Value must be between 1 and 9, or -1"),
    ("compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: "
                                     "Value must be between -131072 and 22"),
    ("message.timestamp.type", "Now", "Invalid value Now for configuration message.timestamp.type: String must "
                                      "be one of: CreateTime, LogAppendTime"),
    ("no.such.config", "1", "Unknown topic config name: no.such.config"),
    ("retention.ms", None, "Null value not supported for topic configs: retention.ms"),
])
def test_bad_values_answer_kafkas_messages(name, value, message):
    with pytest.raises(InvalidConfig) as caught:
        topic_configs.validate({name: value})
    assert str(caught.value) == message


def test_checks_across_configs():
    with pytest.raises(InvalidConfig, match=r"conflict topic config setting min.compaction.lag.ms \(10\) > "
                                            r"max.compaction.lag.ms \(5\)"):
        topic_configs.validate({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    with pytest.raises(InvalidConfig, match="Tiered Storage functionality is disabled in the broker"):
        topic_configs.validate({"remote.storage.enable": "true"})
    assert topic_configs.validate({"remote.storage.enable": "false"}) == {"remote.storage.enable": "false"}
