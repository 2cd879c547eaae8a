"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs at the wire level, in-process."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from tests.support.data_plane import Plane, batch, req

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


async def describe(plane, *resources, version=4, synonyms=False, docs=False):
    response = await plane.call(req(ApiKey.DESCRIBE_CONFIGS, version, include_synonyms=synonyms,
                                    include_documentation=docs, resources=[
                                        {"resource_type": t, "resource_name": n, "configuration_keys": keys}
                                        for t, n, keys in resources]))
    return response.results


def entries(result):
    return {c.name: c for c in result.configs}


async def alter(plane, resources, version=2, validate_only=False):
    response = await plane.call(req(ApiKey.ALTER_CONFIGS, version, validate_only=validate_only, resources=[
        {"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v} for k, v in configs.items()]}
        for t, n, configs in resources]))
    return [(r.error_code, r.error_message) for r in response.responses]


async def incremental(plane, resources, version=1, validate_only=False):
    response = await plane.call(req(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, validate_only=validate_only,
                                    resources=[{"resource_type": t, "resource_name": n, "configs": [
                                        {"name": k, "config_operation": op, "value": v} for k, op, v in ops]}
                                        for t, n, ops in resources]))
    return [(r.error_code, r.error_message) for r in response.responses]


async def test_describe_topic_sources_synonyms_documentation(tmp_path):
    async with Plane(str(tmp_path), **{"log.retention.hours": "24"}) as plane:
        await plane.create("t", configs={"retention.bytes": "1000", "segment.ms": "60000"})
        [result] = await describe(plane, (TOPIC, "t", None), synonyms=True, docs=True)
        assert result.error_code == ErrorCode.none and result.resource_name == "t"
        got = entries(result)
        assert len(got) >= 33
        assert (got["retention.bytes"].value, got["retention.bytes"].config_source) == ("1000", 1)
        assert [(s.name, s.value, s.source) for s in got["retention.bytes"].synonyms] == [
            ("retention.bytes", "1000", 1), ("log.retention.bytes", "-1", 5)]
        assert (got["retention.ms"].value, got["retention.ms"].config_source) == (str(24 * 3600_000), 4)
        assert [(s.name, s.value, s.source) for s in got["retention.ms"].synonyms] == [
            ("log.retention.hours", "24", 4)]
        assert (got["compression.type"].value, got["compression.type"].config_source) == ("producer", 5)
        assert got["segment.ms"].config_type == 5 and got["cleanup.policy"].config_type == 7
        assert got["segment.ms"].documentation and not got["segment.ms"].read_only
        [v1] = await describe(plane, (TOPIC, "t", ("segment.ms", "nope")), version=1)
        assert [(c.name, c.value, c.config_source, c.synonyms) for c in v1.configs] == [("segment.ms", "60000", 1, ())]


async def test_describe_errors(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        results = await describe(plane, (TOPIC, "missing", None), (TOPIC, "bad/name", None), (BROKER, "7", None),
                                 (BROKER, "x", None), (BROKER_LOGGER, "1", None), (BROKER, "", None))
        codes = [(r.error_code, r.error_message, len(r.configs)) for r in results]
        assert codes == [
            (ErrorCode.unknown_topic_or_partition, None, 0),
            (ErrorCode.invalid_topic_exception, codes[1][1], 0),
            (ErrorCode.invalid_request, "Unexpected broker id, expected 1 or empty string, but received 7", 0),
            (ErrorCode.invalid_request, "Broker id must be an integer, but it is: x", 0),
            (ErrorCode.invalid_request, "Unsupported resource type: BROKER_LOGGER", 0),
            (ErrorCode.none, None, 0)]


async def test_describe_broker_static_default_and_sensitive(tmp_path):
    async with Plane(str(tmp_path), **{"storage.url": "", "log.retention.ms": "5000"}) as plane:
        [result] = await describe(plane, (BROKER, "1", None), synonyms=True, docs=True)
        got = entries(result)
        assert got["storage.url"].is_sensitive and got["storage.url"].value is None
        assert got["storage.url"].config_type == 9
        assert [s.value for s in got["storage.url"].synonyms] == [None]
        assert (got["log.retention.ms"].value, got["log.retention.ms"].config_source) == ("5000", 4)
        assert [(s.name, s.source) for s in got["log.retention.ms"].synonyms] == [
            ("log.retention.ms", 4), ("log.retention.hours", 5)]
        assert (got["num.partitions"].value, got["num.partitions"].config_source) == ("1", 5)
        assert got["log.dirs"].config_source == 4 and got["log.dirs"].read_only
        assert got["log.retention.minutes"].value is None


async def test_alter_replaces_the_set_and_applies_to_live_partitions(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", configs={"retention.ms": "1000", "max.message.bytes": "100000"})
        assert await alter(plane, [(TOPIC, "t", {"max.message.bytes": "100"})], validate_only=True) == [
            (ErrorCode.none, None)]
        assert plane.data.partition("t", 0).config.max_message_bytes == 100000
        assert await alter(plane, [(TOPIC, "t", {"max.message.bytes": "100", "segment.ms": "5000"})]) == [
            (ErrorCode.none, None)]
        assert plane.data.catalog.get("t").config_map() == {"max.message.bytes": "100", "segment.ms": "5000"}
        assert plane.data.partition("t", 0).config.max_message_bytes == 100
        assert (await plane.produce("t", 0, batch(b"x" * 500))).error_code == ErrorCode.message_too_large
    async with Plane(str(tmp_path)) as again:  # the change survives a restart
        assert again.data.catalog.get("t").config_map() == {"max.message.bytes": "100", "segment.ms": "5000"}
        assert again.data.partition("t", 0).config.max_message_bytes == 100


async def test_alter_errors(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        assert await alter(plane, [(TOPIC, "t", {"retention.ms": "x"}), (TOPIC, "missing", {}),
                                   (TOPIC, "", {}), (BROKER, "1", {"log.retention.hours": "5"}),
                                   (BROKER, "2", {}), (BROKER, "", {}), (TOPIC, "t2", {"a": None})]) == [
            (ErrorCode.invalid_config, "Invalid value x for configuration retention.ms: Not a number of type LONG"),
            (ErrorCode.unknown_topic_or_partition, "The topic 'missing' does not exist."),
            (ErrorCode.invalid_request, "Default topic resources are not allowed."),
            (ErrorCode.invalid_request, "Cannot update these configs dynamically: Set(log.retention.hours)"),
            (ErrorCode.invalid_request, "Unexpected broker id, expected 1, but received 2"),
            (ErrorCode.none, None),
            (ErrorCode.unknown_topic_or_partition, "The topic 't2' does not exist.")]
        assert await alter(plane, [(TOPIC, "t", {}), (TOPIC, "t", {})]) == [
            (ErrorCode.invalid_request, "Each resource must appear at most once.")] * 2
        response = await plane.call(req(ApiKey.ALTER_CONFIGS, 0, validate_only=False, resources=[
            {"resource_type": TOPIC, "resource_name": "t",
             "configs": [{"name": "retention.ms", "value": "1"}, {"name": "retention.ms", "value": "2"}]}]))
        assert response.responses[0].error_message == "Error due to duplicate config keys"


async def test_incremental_operations(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", configs={"retention.ms": "1000", "segment.ms": "5000"})
        assert await incremental(plane, [(TOPIC, "t", [("retention.ms", 1, None), ("cleanup.policy", 2, "compact"),
                                                       ("segment.bytes", 0, "1048576")])]) == [(ErrorCode.none, None)]
        assert plane.data.catalog.get("t").config_map() == {
            "cleanup.policy": "delete,compact", "segment.ms": "5000", "segment.bytes": "1048576"}
        part = plane.data.partition("t", 0)
        assert part.config.compaction is not None and part.log.segment_bytes == 1048576
        assert await incremental(plane, [(TOPIC, "t", [("cleanup.policy", 3, "delete")])]) == [(ErrorCode.none, None)]
        assert plane.data.catalog.get("t").config_map()["cleanup.policy"] == "compact"
        assert not plane.data.partition("t", 0).config.retention.delete
        assert await incremental(plane, [(TOPIC, "t", [("retention.ms", 2, "5")]),
                                         (TOPIC, "t2", [("retention.ms", 0, "5")]),
                                         (TOPIC, "t", [("retention.ms", 7, "5")]),
                                         (BROKER, "", [("num.partitions", 0, "5")])]) == [
            (ErrorCode.invalid_request, "Each resource must appear at most once."),
            (ErrorCode.unknown_topic_or_partition, "The topic 't2' does not exist."),
            (ErrorCode.invalid_request, "Each resource must appear at most once."),
            (ErrorCode.invalid_request, "Cannot update these configs dynamically: Set(num.partitions)")]
        assert await incremental(plane, [(TOPIC, "t", [("retention.ms", 2, "5")])]) == [
            (ErrorCode.invalid_config, "Can't APPEND to key retention.ms because its type is not LIST.")]
        assert await incremental(plane, [(TOPIC, "t", [("retention.ms", 7, "5")])]) == [
            (ErrorCode.invalid_request, "Unknown operation type 7")]
        assert await incremental(plane, [(TOPIC, "t", [("segment.ms", 0, "1")])], validate_only=True) == [
            (ErrorCode.none, None)]
        assert plane.data.catalog.get("t").config_map()["segment.ms"] == "5000"


# Kafka 3.9's deprecated topic configs that it accepts and ignores: message.format.version (KIP-724: any version
# MetadataVersion.fromVersionString knows, longer ones cut to their release) and message.downconversion.enable
MESSAGE_FORMAT_VERSIONS = ["0.8.2", "0.10.0", "0.10.0.1", "0.10.2-IV0", "0.11.0.2", "1.0", "2.8.2", "2.8-IV1",
                           "3.0-IV1", " 3.9 "]


async def test_deprecated_topic_configs_are_accepted_stored_described_and_ignored(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        for i, version in enumerate(MESSAGE_FORMAT_VERSIONS):
            created = await plane.create(f"v{i}", configs={"message.format.version": version,
                                                           "message.downconversion.enable": "false"})
            assert created.error_code == ErrorCode.none, (version, created.error_message)
        await plane.create("t")
        assert await alter(plane, [(TOPIC, "t", {"message.format.version": "0.10.0.0"})]) == [(ErrorCode.none, None)]
        assert await incremental(plane, [(TOPIC, "t", [("message.format.version", 0, "0.11.0.2"),
                                                       ("message.downconversion.enable", 0, "false")])]) == [
            (ErrorCode.none, None)]
        [result] = await describe(plane, (TOPIC, "t", ("message.format.version", "message.downconversion.enable")),
                                  synonyms=True)
        got = entries(result)
        assert [(s.name, s.value, s.source) for s in got["message.format.version"].synonyms] == [
            ("message.format.version", "0.11.0.2", 1), ("log.message.format.version", "3.0-IV1", 5)]
        assert (got["message.downconversion.enable"].value, got["message.downconversion.enable"].config_source) == (
            "false", 1)
        [v0] = await describe(plane, (TOPIC, "v0", ("message.format.version",)), synonyms=True)
        assert [(c.value, c.config_source) for c in v0.configs] == [("0.8.2", 1)]
        await plane.create("plain")
        [plain] = await describe(plane, (TOPIC, "plain", ("message.format.version",)), synonyms=True)
        assert [(c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
                for c in plain.configs] == [("3.0-IV1", 5, [("log.message.format.version", "3.0-IV1", 5)])]
        assert (await plane.produce("t", 0, batch(b"x"))).error_code == ErrorCode.none  # ignored: v2 batches go on


async def test_message_format_version_refuses_what_kafka_refuses(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        for version in ("5.0", "0.10.0-IV9", "3.10", "garbage", "9"):
            assert await alter(plane, [(TOPIC, "t", {"message.format.version": version})]) == [(
                ErrorCode.invalid_config,
                f"Invalid value {version} for configuration message.format.version: "
                f"Version {version} is not a valid version")]
