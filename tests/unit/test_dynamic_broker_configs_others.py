"""Kafka's dynamic broker configs besides the log defaults (DynamicBrokerConfig: SSL, listener and SASL settings,
connection limits, thread pools, cleaner, ...): accepted, stored and described as Kafka does, per-broker vs
cluster-wide, listener-prefixed names, passwords never shown; Kafka's non-dynamic configs refused."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.data_plane.broker_config_defs import PER_BROKER, per_broker
from coordinator.data_plane.broker_configs import DynamicBrokerConfigs, FileDynamicConfigStore, is_dynamic
from coordinator.net.connection_quotas import ConnectionQuotas
from tests.support.data_plane import Plane
from tests.unit.test_configs_admin import alter, describe, entries, incremental

BROKER = 4
SET, DELETE = 0, 1
DYNAMIC_BROKER, DYNAMIC_DEFAULT = 2, 3
OK = [(ErrorCode.none, None)]


def test_kafkas_lists():
    for name in ("sasl.kerberos.min.time.before.relogin", "listeners", "advertised.listeners", "num.io.threads",
                 "log.cleaner.threads", "max.connections.per.ip", "metric.reporters", "producer.id.expiration.ms",
                 "listener.name.external.ssl.keystore.location", "listener.name.sasl_ssl.plain.sasl.jaas.config",
                 "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", "follower.replication.throttled.rate",
                 "log.retention.ms"):
        assert is_dynamic(name), name
    for name in ("log.dirs", "node.id", "broker.id", "log.message.format.version", "log.retention.hours",
                 "listener.name.external.log.dirs", "offsets.topic.num.partitions", "no.such.config"):
        assert not is_dynamic(name), name
    assert per_broker("listeners") and per_broker("sasl.kerberos.min.time.before.relogin")
    assert per_broker("listener.name.external.ssl.keystore.location")
    assert not per_broker("max.connections") and not per_broker("listener.name.external.max.connections")
    assert not per_broker("num.io.threads") and "num.network.threads" not in PER_BROKER


async def test_a_listener_sasl_setting_is_accepted_for_a_node_stored_and_described(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        assert await incremental(plane, [(BROKER, "1", [("sasl.kerberos.min.time.before.relogin", SET, "30000"),
                                                        ("listener.name.external.sasl.enabled.mechanisms", SET,
                                                         "PLAIN, SCRAM-SHA-256")])]) == OK
        assert await alter(plane, [(BROKER, "", {"log.cleaner.threads": "2", "num.io.threads": "16"})]) == OK
        assert await incremental(plane, [(BROKER, "", [("sasl.kerberos.min.time.before.relogin", SET, "1")])]) == [
            (ErrorCode.invalid_request, "Cannot update these configs at default cluster level, broker id must be "
                                        "specified: Set(sasl.kerberos.min.time.before.relogin)")]
    async with Plane(str(tmp_path)) as again:  # kept across a restart
        [node] = await describe(again, (BROKER, "1", None), synonyms=True)
        got = entries(node)
        relogin = got["sasl.kerberos.min.time.before.relogin"]
        assert (relogin.value, relogin.config_source, relogin.read_only, relogin.config_type) == (
            "30000", DYNAMIC_BROKER, False, 5)
        assert got["listener.name.external.sasl.enabled.mechanisms"].value == "PLAIN,SCRAM-SHA-256"
        assert (got["num.io.threads"].value, got["num.io.threads"].config_source) == ("16", DYNAMIC_DEFAULT)
        [cluster] = await describe(again, (BROKER, "", None))
        assert {c.name: c.value for c in cluster.configs} == {"log.cleaner.threads": "2", "num.io.threads": "16"}
        assert got["log.dirs"].read_only and not got["max.connections"].read_only


async def test_what_kafka_refuses(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        cases = [
            ("1", {"log.dirs": "/x", "log.message.format.version": "3.0"},
             "Cannot update these configs dynamically: Set(log.dirs, log.message.format.version)"),
            ("1", {"ssl.keystore.location": "/k.pem"}, "These security configs can be dynamically updated only "
                                                        "per-listener using the listener prefix: "
                                                        "Set(ssl.keystore.location)"),
            ("1", {"sasl.login.refresh.min.period.seconds": "x"}, "Invalid value x for configuration "
                                                                  "sasl.login.refresh.min.period.seconds: "
                                                                  "Not a number of type SHORT"),
            ("1", {"ssl.client.auth": "maybe"}, "Invalid value maybe for configuration ssl.client.auth: String must "
                                                "be one of: required, requested, none"),
            ("", {"listener.name.external.ssl.keystore.location": "/k.pem"},
             "Cannot update these configs at default cluster level, broker id must be specified: "
             "Set(listener.name.external.ssl.keystore.location)"),
            ("", {"num.io.threads": "17"}, "Dynamic thread count update validation failed for num.io.threads=17, "
                                           "value should not be greater than double the current value 8"),
            ("", {"num.io.threads": "3"}, "Dynamic thread count update validation failed for num.io.threads=3, "
                                          "value should be at least half the current value 8"),
            ("", {"max.connections.per.ip.overrides": "nohost"}, "Invalid value nohost for configuration "
                                                                 "max.connections.per.ip.overrides: "
                                                                 "'nohost' is not host:count"),
        ]
        for level, configs, message in cases:
            assert await alter(plane, [(BROKER, level, configs)]) == [(ErrorCode.invalid_request, message)], configs
        assert plane.services.dynamic.levels == {}


async def test_passwords_are_stored_but_never_described(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        assert await incremental(plane, [(BROKER, "1", [
            ("listener.name.external.ssl.keystore.password", SET, "s3cret"),
            ("listener.name.sasl_ssl.plain.sasl.jaas.config", SET, "jaas-with-passwords")])]) == OK
        [node] = await describe(plane, (BROKER, "1", None), synonyms=True)
        got = entries(node)
        for name in ("listener.name.external.ssl.keystore.password", "listener.name.sasl_ssl.plain.sasl.jaas.config"):
            assert (got[name].value, got[name].is_sensitive, got[name].config_type) == (None, True, 9)
            assert [s.value for s in got[name].synonyms] == [None]
        assert plane.services.dynamic.broker["listener.name.external.ssl.keystore.password"] == "s3cret"
        assert await incremental(plane, [(BROKER, "1", [("listener.name.external.ssl.keystore.password",
                                                          DELETE, None)])]) == OK
        assert "listener.name.external.ssl.keystore.password" not in plane.services.dynamic.broker


async def test_connection_limits_set_dynamically_apply_at_once_and_fall_back_when_deleted(tmp_path):
    async with Plane(str(tmp_path), **{"max.connections.per.ip": "50"}) as plane:
        quotas = ConnectionQuotas.from_config(plane.config)
        quotas.watch(plane.config, plane.services.dynamic)
        assert quotas.per_ip == 50
        assert await incremental(plane, [(BROKER, "", [("max.connections.per.ip", SET, "2"),
                                                       ("max.connections.per.ip.overrides", SET, "10.0.0.9:5")])]) == OK
        assert (quotas.per_ip, quotas.overrides) == (2, {"10.0.0.9": 5})
        assert quotas.admit("10.0.0.1") and quotas.admit("10.0.0.1") and not quotas.admit("10.0.0.1")
        assert await incremental(plane, [(BROKER, "1", [("max.connections.per.ip", SET, "3")])]) == OK
        assert quotas.per_ip == 3 and quotas.admit("10.0.0.1")  # the node's own value wins
        assert await incremental(plane, [(BROKER, "1", [("max.connections.per.ip", DELETE, None)]),
                                         ]) == OK
        assert quotas.per_ip == 2
        assert await alter(plane, [(BROKER, "", {})]) == OK  # the cluster level emptied: the static setting
        assert (quotas.per_ip, quotas.overrides) == (50, {})


async def test_a_store_written_by_another_node_is_applied_at_refresh(tmp_path):
    store = FileDynamicConfigStore(str(tmp_path))
    configs = DynamicBrokerConfigs(1, store, {})
    seen = []
    configs.watchers.append(lambda c: seen.append(c.value("max.connections")))
    await configs.set("", {"max.connections": "10"})
    await configs.refresh()  # nothing changed: no call
    assert seen == ["10"]
