"""Group configs (Kafka's GroupConfig) on GROUP resources, in process: IncrementalAlterConfigs checks them against
the broker's bounds (INVALID_CONFIG, Kafka's messages), validate_only changes nothing, DescribeConfigs lists every
consumer.* and share.* config with its source, a restart reads them back (group-configs.json), DELETE returns to
the broker's value; and they are used: a consumer group's heartbeat interval and session, a share group's
settings (share.auto.offset.reset, share.record.lock.duration.ms, share.isolation.level)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.groups.consumer.config_settings import ConsumerTiming
from tests.support.dispatch import InProcess, make_services, named_request
from tests.support.group_requests import call, ms

E = ErrorCode
SET, DELETE, APPEND = 0, 1, 2
GROUP_CONFIG, DEFAULT_CONFIG = 8, 5


def alter_request(group: str, *configs, validate_only: bool = False):
    return named_request("incremental_alter_configs", 1, resources=[{
        "resource_type": 32, "resource_name": group, "configs": [
            {"name": n, "config_operation": op, "value": v} for n, op, v in configs]}], validate_only=validate_only)


async def alter(app: InProcess, *configs, group: str = "sg", validate_only: bool = False):
    [result] = (await call(app, alter_request(group, *configs, validate_only=validate_only))).responses
    return result


async def describe(app: InProcess, group: str = "sg", keys=None) -> dict[str, tuple[str, int]]:
    [result] = (await call(app, named_request("describe_configs", 4, resources=[{
        "resource_type": 32, "resource_name": group, "configuration_keys": keys}], include_synonyms=False,
        include_documentation=True))).results
    assert result.error_code is E.none
    return {c.name: (c.value, c.config_source) for c in result.configs}


@pytest.mark.parametrize(("config", "message"), [
    (("share.record.lock.duration.ms", SET, "5000"),
     "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
    (("share.record.lock.duration.ms", SET, "90000"),
     "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"),
    (("share.auto.offset.reset", SET, "sometimes"), "Invalid value sometimes for configuration"),
    (("share.isolation.level", SET, "read_dirty"), "String must be one of"),
    (("consumer.unknown", SET, "1"), "Unknown group config name: consumer.unknown"),
    (("share.session.timeout.ms", SET, "x"), "Not a number of type INT"),
    (("consumer.session.timeout.ms", SET, "0"), "Value must be at least 1"),
    (("consumer.session.timeout.ms", SET, "30000"),
     "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    (("consumer.heartbeat.interval.ms", SET, "20000"),
     "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
    (("share.auto.offset.reset", APPEND, "earliest"), "its type is not LIST"),
    (("share.auto.offset.reset", SET, None), "Null value not supported"),
])
async def test_a_bad_group_config_is_invalid_config(tmp_path, config, message):
    app = InProcess(make_services(**{"log.dirs": str(tmp_path)}))
    result = await alter(app, config)
    assert result.error_code is E.invalid_config and message in (result.error_message or ""), result
    assert not (tmp_path / "group-configs.json").exists()


async def test_the_session_must_outlast_the_heartbeat(tmp_path):
    app = InProcess(make_services(**{"log.dirs": str(tmp_path), "group.consumer.max.heartbeat.interval.ms": "50000",
                                     "group.consumer.min.heartbeat.interval.ms": "1000"}))
    result = await alter(app, ("consumer.heartbeat.interval.ms", SET, "46000"))
    assert result.error_code is E.invalid_config
    assert result.error_message == "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"


async def test_group_configs_are_persisted_described_and_deleted(tmp_path):
    app = InProcess(make_services(**{"log.dirs": str(tmp_path)}))
    configs = app.services.share.group_configs
    assert (await alter(app, ("share.auto.offset.reset", SET, "earliest"), validate_only=True)).error_code is E.none
    assert configs.settings_for("sg").auto_offset_reset == "latest"  # validate_only: nothing changed
    result = await alter(app, ("share.auto.offset.reset", SET, "earliest"),
                         ("share.record.lock.duration.ms", SET, "20000"), ("share.isolation.level", SET,
                                                                            "read_committed"),
                         ("consumer.heartbeat.interval.ms", SET, "6000"))
    assert result.error_code is E.none
    settings = configs.settings_for("sg")
    assert (settings.auto_offset_reset, settings.record_lock_duration_ms, settings.isolation_level) == (
        "earliest", 20000, "read_committed")
    assert configs.consumer_timing("sg").heartbeat_interval_ms == 6000
    assert configs.settings_for("other").auto_offset_reset == "latest"
    entries = await describe(app)
    assert list(entries) == ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
                             "share.session.timeout.ms", "share.heartbeat.interval.ms",
                             "share.record.lock.duration.ms", "share.auto.offset.reset", "share.isolation.level"]
    assert entries["share.auto.offset.reset"] == ("earliest", GROUP_CONFIG)
    assert entries["consumer.heartbeat.interval.ms"] == ("6000", GROUP_CONFIG)
    assert entries["share.session.timeout.ms"] == ("45000", DEFAULT_CONFIG)
    assert await describe(app, keys=["share.isolation.level"]) == {"share.isolation.level": ("read_committed",
                                                                                             GROUP_CONFIG)}

    again = InProcess(make_services(**{"log.dirs": str(tmp_path)}))  # a restart reads them back
    assert again.services.share.group_configs.settings_for("sg").auto_offset_reset == "earliest"
    assert (await alter(again, ("share.auto.offset.reset", DELETE, None))).error_code is E.none
    assert again.services.share.group_configs.settings_for("sg").auto_offset_reset == "latest"
    assert again.services.share.group_configs.settings_for("sg").record_lock_duration_ms == 20000
    third = InProcess(make_services(**{"log.dirs": str(tmp_path)}))
    assert (await describe(third))["share.auto.offset.reset"] == ("latest", DEFAULT_CONFIG)


async def test_a_narrower_broker_bound_after_a_restart_falls_back_to_the_broker_settings(tmp_path):
    app = InProcess(make_services(**{"log.dirs": str(tmp_path)}))
    assert (await alter(app, ("share.record.lock.duration.ms", SET, "50000"))).error_code is E.none
    narrower = InProcess(make_services(**{"log.dirs": str(tmp_path),
                                          "group.share.max.record.lock.duration.ms": "40000"}))
    assert narrower.services.share.group_configs.settings_for("sg").record_lock_duration_ms == 30000


async def test_a_consumer_group_heartbeats_at_its_own_interval(tmp_path):
    app = InProcess(make_services(**{"log.dirs": str(tmp_path)}))

    def join(group: str):
        return named_request("consumer_group_heartbeat", 0, group_id=group, member_id="", member_epoch=0,
                             instance_id=None, rack_id=None, rebalance_timeout=ms(30000),
                             subscribed_topic_names=("t",), server_assignor=None, topic_partitions=())

    assert (await alter(app, ("consumer.heartbeat.interval.ms", SET, "7000"), group="cg")).error_code is E.none
    own = await call(app, join("cg"))
    other = await call(app, join("cg2"))
    assert own.error_code is E.none and own.heartbeat_interval.total_seconds() == 7
    assert other.heartbeat_interval.total_seconds() == 5


def test_a_consumer_groups_session_is_its_consumer_session_timeout():
    from tests.support.consumer_groups import Consumer, ConsumerHarness

    h = ConsumerHarness()
    h.shard().consumer.ops.timing_for = lambda group_id: ConsumerTiming(session_timeout_ms=55_000)
    a = Consumer(h)
    a.beat()
    h.clock.advance(50_000)  # past the broker's 45 s, within the group's 55 s
    assert a.member_id in h.group().members
    h.clock.advance(6_000)
    assert h.group().members == {}
