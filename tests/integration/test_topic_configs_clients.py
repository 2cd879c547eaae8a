"""Topic and broker configs through real admin clients against the real server: confluent-kafka's
AdminClient (librdkafka: CreateTopics with configs, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs) and kafka-python's KafkaAdminClient (DescribeConfigs, AlterConfigs); a
restart keeps the altered configs."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from tests.support.data_plane import req
from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

CONFIGS = {
    "cleanup.policy": "compact,delete", "retention.ms": "3600000", "retention.bytes": "1048576",
    "segment.bytes": "1048576", "segment.ms": "600000", "max.message.bytes": "200000",
    "min.insync.replicas": "1", "compression.type": "zstd", "message.timestamp.type": "LogAppendTime",
    "min.cleanable.dirty.ratio": "0.2", "delete.retention.ms": "1000", "preallocate": "false",
    "unclean.leader.election.enable": "false", "index.interval.bytes": "8192",
}


def described(admin: AdminClient, resource: ConfigResource) -> dict:
    return admin.describe_configs([resource])[resource].result(timeout=15)


def test_confluent_admin_configs_and_restart(tmp_path):
    log_dir = str(tmp_path / "data")
    server = start_server(log_dir)
    try:
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        admin.create_topics([NewTopic("cfg", num_partitions=2, replication_factor=1, config=CONFIGS)])["cfg"] \
            .result(timeout=15)
        bad = admin.create_topics([NewTopic("bad", 1, 1, config={"segment.ms": "0"})])["bad"]
        with pytest.raises(KafkaException, match="Value must be at least 1"):
            bad.result(timeout=15)

        topic = ConfigResource(ResourceType.TOPIC, "cfg")
        got = described(admin, topic)
        for name, value in CONFIGS.items():
            assert got[name].value == value and got[name].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value, name
        assert got["flush.ms"].source == ConfigSource.DEFAULT_CONFIG.value

        admin.alter_configs([ConfigResource(ResourceType.TOPIC, "cfg", set_config={"retention.ms": "1000"})])[
            ConfigResource(ResourceType.TOPIC, "cfg")].result(timeout=15)
        got = described(admin, topic)
        assert got["retention.ms"].value == "1000" and got["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value

        ops = ConfigResource(ResourceType.TOPIC, "cfg", incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
            ConfigEntry("segment.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
        admin.incremental_alter_configs([ops])[ops].result(timeout=15)
        got = described(admin, topic)
        assert (got["cleanup.policy"].value, got["segment.ms"].value) == ("delete,compact", "7200000")
        assert got["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value

        broker = described(admin, ConfigResource(ResourceType.BROKER, "1"))
        assert broker["storage.url"].is_sensitive and broker["storage.url"].value is None
        assert broker["log.dirs"].value == log_dir and broker["log.dirs"].is_read_only
        refused = ConfigResource(ResourceType.BROKER, "1", set_config={"log.retention.hours": "1"})
        with pytest.raises(KafkaException, match="Cannot update these configs dynamically"):
            admin.alter_configs([refused])[refused].result(timeout=15)
    finally:
        assert server.stop() == 0

    again = start_server(log_dir)
    try:
        got = described(AdminClient({"bootstrap.servers": again.bootstrap}), ConfigResource(ResourceType.TOPIC, "cfg"))
        assert (got["cleanup.policy"].value, got["segment.ms"].value) == ("delete,compact", "7200000")
    finally:
        assert again.stop() == 0


def test_confluent_admin_dynamic_broker_config_and_restart(tmp_path):
    log_dir = str(tmp_path / "data")
    server = start_server(log_dir)
    try:
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        admin.create_topics([NewTopic("plain", 1, 1)])["plain"].result(timeout=15)
        # librdkafka refuses a ConfigResource named "" (the cluster default), so that one goes over the wire
        with WireClient(server.host, server.port) as client:
            answer = client.call(req(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
                {"resource_type": 4, "resource_name": "", "configs": [
                    {"name": "log.retention.ms", "config_operation": 0, "value": "4242000"}]}]))
            assert [(r.error_code, r.resource_name) for r in answer.responses] == [(ErrorCode.none, "")]
            cluster = {"resource_type": 4, "resource_name": "", "configuration_keys": None}
            default = client.call(req(ApiKey.DESCRIBE_CONFIGS, 4, include_synonyms=False, include_documentation=False,
                                      resources=[cluster]))
            assert [(c.name, c.value, c.config_source) for c in default.results[0].configs] == [
                ("log.retention.ms", "4242000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)]
        broker = described(admin, ConfigResource(ResourceType.BROKER, "1"))
        assert broker["log.retention.ms"].value == "4242000" and not broker["log.retention.ms"].is_read_only
        assert broker["log.retention.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        got = described(admin, ConfigResource(ResourceType.TOPIC, "plain"))
        assert got["retention.ms"].value == "4242000"
        assert got["retention.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    finally:
        assert server.stop() == 0

    again = start_server(log_dir)
    try:
        admin = AdminClient({"bootstrap.servers": again.bootstrap})
        got = described(admin, ConfigResource(ResourceType.TOPIC, "plain"))
        assert got["retention.ms"].value == "4242000"
        assert got["retention.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        assert described(admin, ConfigResource(ResourceType.BROKER, "1"))["log.retention.ms"].value == "4242000"
    finally:
        assert again.stop() == 0


def test_kafka_python_admin_configs(tmp_path):
    from kafka.admin import ConfigResource as KPResource, ConfigResourceType, KafkaAdminClient, NewTopic as KPTopic

    server = start_server(str(tmp_path / "data"))
    try:
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=15000)
        try:
            admin.create_topics([KPTopic("kp", 1, 1, topic_configs={"segment.ms": "600000"})])
            admin.alter_configs([KPResource(ConfigResourceType.TOPIC, "kp", configs={"retention.ms": "5000"})])
            described = admin.describe_configs([KPResource(ConfigResourceType.TOPIC, "kp")], config_filter="all")
            entries = described["topic"]["kp"]
            # kafka-python's alter_configs keeps the configs already set (it describes them first)
            assert entries["retention.ms"]["value"] == "5000" and entries["segment.ms"]["value"] == "600000"
        finally:
            admin.close()
    finally:
        assert server.stop() == 0


def test_confluent_admin_kafkas_other_dynamic_broker_configs_are_kept_and_connection_limits_apply(tmp_path):
    """What Kafka updates dynamically besides the log defaults (DynamicBrokerConfig): a listener's SASL setting and
    a keystore password are stored and described (the password never shown); a connection limit applies at once
    and after a restart."""
    from tests.integration.test_connection_quotas import answers, connect_from

    log_dir = str(tmp_path / "data")
    server = start_server(log_dir)
    try:
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        node = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry("sasl.kerberos.min.time.before.relogin", "30000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("listener.name.plaintext.ssl.keystore.password", "s3cret",
                        incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("max.connections.per.ip.overrides", "127.0.0.5:1", incremental_operation=AlterConfigOpType.SET),
        ])
        admin.incremental_alter_configs([node])[node].result(timeout=15)
        first = connect_from(server, "127.0.0.5")
        assert answers(first)
        assert connect_from(server, "127.0.0.5").is_closed_by_server()  # the new limit, without a restart
        first.close()
        broker = described(admin, ConfigResource(ResourceType.BROKER, "1"))
        relogin = broker["sasl.kerberos.min.time.before.relogin"]
        assert (relogin.value, relogin.source, relogin.is_read_only) == (
            "30000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
        password = broker["listener.name.plaintext.ssl.keystore.password"]
        assert password.value is None and password.is_sensitive
    finally:
        assert server.stop() == 0

    again = start_server(log_dir)
    try:
        first = connect_from(again, "127.0.0.5")
        assert answers(first)
        assert connect_from(again, "127.0.0.5").is_closed_by_server()
        first.close()
        admin = AdminClient({"bootstrap.servers": again.bootstrap})
        broker = described(admin, ConfigResource(ResourceType.BROKER, "1"))
        assert broker["sasl.kerberos.min.time.before.relogin"].value == "30000"
    finally:
        assert again.stop() == 0
