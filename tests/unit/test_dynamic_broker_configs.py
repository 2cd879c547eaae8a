"""Dynamic broker configs (DynamicLogConfig): set cluster-wide ("") or for this node, precedence,
sources and synonyms in DescribeConfigs, validation, live application and persistence."""

from __future__ import annotations

import json
import os

from kio.schema.errors import ErrorCode

from coordinator.data_plane.broker_configs import DYNAMIC_LOG_CONFIGS
from tests.support.data_plane import Plane
from tests.unit.test_configs_admin import alter, describe, entries, incremental

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5


def test_the_dynamic_names_are_kafkas_dynamic_log_configs():
    for name in ("log.retention.ms", "log.retention.bytes", "log.cleanup.policy", "log.segment.bytes",
                 "message.max.bytes", "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
                 "log.roll.ms", "compression.type", "min.insync.replicas", "log.cleaner.delete.retention.ms"):
        assert name in DYNAMIC_LOG_CONFIGS
    for name in ("log.retention.hours", "log.retention.minutes", "log.roll.hours", "log.message.format.version",
                 "num.partitions", "log.dirs"):
        assert name not in DYNAMIC_LOG_CONFIGS
    assert DYNAMIC_LOG_CONFIGS["message.max.bytes"] == "max.message.bytes"


async def test_cluster_default_applies_to_topics_without_an_override_and_survives_restart(tmp_path):
    async with Plane(str(tmp_path), **{"log.retention.hours": "24"}) as plane:
        await plane.create("plain")
        await plane.create("own", configs={"retention.ms": "1000"})
        changes = [("log.retention.ms", SET, "7000"), ("message.max.bytes", SET, "2000")]
        assert await incremental(plane, [(BROKER, "", changes)]) == [(ErrorCode.none, None)]
        assert plane.data.partition("plain", 0).config.retention.retention_ms == 7000
        assert plane.data.partition("plain", 0).config.max_message_bytes == 2000
        assert plane.data.partition("own", 0).config.retention.retention_ms == 1000
        [default] = await describe(plane, (BROKER, "", None), synonyms=True)
        assert [(c.name, c.value, c.config_source, c.read_only) for c in default.configs] == [
            ("log.retention.ms", "7000", DYNAMIC_DEFAULT, False), ("message.max.bytes", "2000", DYNAMIC_DEFAULT, False)]
        assert [(s.name, s.source) for s in entries(default)["log.retention.ms"].synonyms] == [
            ("log.retention.ms", DYNAMIC_DEFAULT), ("log.retention.hours", STATIC)]
        [broker] = await describe(plane, (BROKER, "1", ("log.retention.ms", "log.retention.hours")))
        assert [(c.name, c.value, c.config_source, c.read_only) for c in broker.configs] == [
            ("log.retention.hours", "24", STATIC, True), ("log.retention.ms", "7000", DYNAMIC_DEFAULT, False)]
        [topic] = await describe(plane, (TOPIC, "plain", ("retention.ms", "max.message.bytes")), synonyms=True)
        got = entries(topic)
        assert (got["retention.ms"].value, got["retention.ms"].config_source) == ("7000", DYNAMIC_DEFAULT)
        assert [(s.name, s.value, s.source) for s in got["retention.ms"].synonyms] == [
            ("log.retention.ms", "7000", DYNAMIC_DEFAULT), ("log.retention.hours", "24", STATIC)]
        assert (got["max.message.bytes"].value, got["max.message.bytes"].config_source) == ("2000", DYNAMIC_DEFAULT)
        await plane.create("later")
        assert plane.data.partition("later", 0).config.max_message_bytes == 2000
    stored = json.loads(open(os.path.join(tmp_path, "dynamic-broker-configs.json")).read())
    assert stored["levels"] == {"": {"log.retention.ms": "7000", "message.max.bytes": "2000"}}
    async with Plane(str(tmp_path), **{"log.retention.hours": "24"}) as again:
        assert again.data.partition("plain", 0).config.retention.retention_ms == 7000
        [topic] = await describe(again, (TOPIC, "plain", ("retention.ms",)))
        assert [(c.value, c.config_source) for c in topic.configs] == [("7000", DYNAMIC_DEFAULT)]


async def test_per_broker_wins_over_cluster_default_and_delete_falls_back(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        assert await incremental(plane, [(BROKER, "", [("log.retention.ms", SET, "1000")]),
                                         (BROKER, "1", [("log.retention.ms", SET, "2000")])]) == [
            (ErrorCode.none, None)] * 2
        assert plane.data.partition("t", 0).config.retention.retention_ms == 2000
        [topic] = await describe(plane, (TOPIC, "t", ("retention.ms",)), synonyms=True)
        [entry] = topic.configs
        assert (entry.value, entry.config_source) == ("2000", DYNAMIC_BROKER)
        assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
            ("log.retention.ms", "2000", DYNAMIC_BROKER), ("log.retention.ms", "1000", DYNAMIC_DEFAULT),
            ("log.retention.hours", "168", DEFAULT)]
        [broker] = await describe(plane, (BROKER, "1", ("log.retention.ms",)))
        assert [(c.value, c.config_source) for c in broker.configs] == [("2000", DYNAMIC_BROKER)]
        [default] = await describe(plane, (BROKER, "", None), synonyms=True)  # no per-broker synonym there
        assert [(s.value, s.source) for s in default.configs[0].synonyms] == [("1000", DYNAMIC_DEFAULT),
                                                                               ("168", DEFAULT)]
        assert await incremental(plane, [(BROKER, "1", [("log.retention.ms", DELETE, None)])]) == [
            (ErrorCode.none, None)]
        assert plane.data.partition("t", 0).config.retention.retention_ms == 1000
        assert await incremental(plane, [(BROKER, "", [("log.retention.ms", DELETE, None)])]) == [
            (ErrorCode.none, None)]
        assert plane.data.partition("t", 0).config.retention.retention_ms == 168 * 3600_000
        [topic] = await describe(plane, (TOPIC, "t", ("retention.ms",)))
        assert [(c.value, c.config_source) for c in topic.configs] == [(str(168 * 3600_000), DEFAULT)]
        [default] = await describe(plane, (BROKER, "", None))
        assert default.configs == ()


async def test_validation_validate_only_and_list_operations(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        assert await incremental(plane, [(BROKER, "", [("log.retention.ms", SET, "x")]),
                                         (BROKER, "1", [("log.retention.hours", SET, "1"),
                                                        ("log.retention.ms", SET, "1")])]) == [
            (ErrorCode.invalid_request,
             "Invalid value x for configuration log.retention.ms: Not a number of type LONG"),
            (ErrorCode.invalid_request, "Cannot update these configs dynamically: Set(log.retention.hours)")]
        assert await incremental(plane, [(BROKER, "", [("log.segment.bytes", SET, "5")])]) == [
            (ErrorCode.invalid_request,
             "Invalid value 5 for configuration log.segment.bytes: Value must be at least 14")]
        assert await incremental(plane, [(BROKER, "", [("log.retention.ms", APPEND, "5")])]) == [
            (ErrorCode.invalid_config, "Config value append is not allowed for config key: log.retention.ms")]
        assert await incremental(plane, [(BROKER, "", [("log.cleanup.policy", SET, "compact")])],
                                 validate_only=True) == [(ErrorCode.none, None)]
        assert plane.services.dynamic.levels == {} and plane.data.partition("t", 0).config.compaction is None
        assert await incremental(plane, [(BROKER, "", [("log.cleanup.policy", APPEND, "compact")])]) == [
            (ErrorCode.none, None)]
        assert plane.services.dynamic.cluster == {"log.cleanup.policy": "delete,compact"}
        assert plane.data.partition("t", 0).config.compaction is not None
        assert await incremental(plane, [(BROKER, "", [("log.cleanup.policy", SUBTRACT, "delete")])]) == [
            (ErrorCode.none, None)]
        assert not plane.data.partition("t", 0).config.retention.delete
        # AlterConfigs replaces the level's whole set
        assert await alter(plane, [(BROKER, "", {"log.retention.bytes": "100"})]) == [(ErrorCode.none, None)]
        assert plane.services.dynamic.cluster == {"log.retention.bytes": "100"}
        assert plane.data.partition("t", 0).config.retention.delete
        assert await alter(plane, [(BROKER, "", {"log.retention.bytes": None})]) == [
            (ErrorCode.invalid_request, "Null value not supported for : log.retention.bytes")]
        assert await alter(plane, [(BROKER, "", {"log.cleaner.min.compaction.lag.ms": "10",
                                                 "log.cleaner.max.compaction.lag.ms": "5"})]) == [
            (ErrorCode.invalid_request,
             "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)")]
        assert await alter(plane, [(BROKER, "7", {"log.retention.bytes": "1"})]) == [
            (ErrorCode.invalid_request, "Unexpected broker id, expected 1, but received 7")]
