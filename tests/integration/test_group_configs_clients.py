"""Group configs with a real client: confluent-kafka's AdminClient sets share.auto.offset.reset=earliest and a
record lock duration on a GROUP resource (incremental_alter_configs), a bad value is refused with INVALID_CONFIG,
the server restarts, describe_configs shows the group's values, and a ShareConsumer of that group gets the records
produced before it joined (the broker's default, latest, would skip them)."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from tests.support.server_process import start_server
from tests.support.share_clients import FAST_SHARE, alter_group_configs, poll_until, produce, share_consumer


def test_share_group_configs_from_confluent_kafka_survive_a_restart_and_are_used(tmp_path):
    data = str(tmp_path / "data")
    server = start_server(data, overrides=FAST_SHARE, topics={"q": 1})
    try:
        produce(server.bootstrap, "q", [f"m{i}".encode() for i in range(20)])
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        try:
            alter_group_configs(admin, "sg", **{"share.record.lock.duration.ms": "500"})  # below the min (1000)
            raise AssertionError("a lock duration below group.share.min.record.lock.duration.ms was accepted")
        except KafkaException as exc:
            assert exc.args[0].name() == "INVALID_CONFIG", exc
        alter_group_configs(admin, "sg",
                            **{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "2000"})
    finally:
        server.stop()

    server = start_server(data, overrides=FAST_SHARE)
    consumer = None
    try:
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        [future] = admin.describe_configs([ConfigResource(ResourceType.GROUP, "sg")]).values()
        entries = future.result(15)
        assert entries["share.auto.offset.reset"].value == "earliest"
        assert entries["share.auto.offset.reset"].source == ConfigSource.GROUP_CONFIG.value
        assert entries["share.record.lock.duration.ms"].value == "2000"
        assert entries["share.isolation.level"].value == "read_uncommitted"
        consumer = share_consumer(server.bootstrap, "sg", ["q"])
        got = poll_until(consumer, lambda got: len({m.offset() for m in got}) >= 20)
        assert {m.offset() for m in got} == set(range(20))  # earliest: what was there before the group
    finally:
        if consumer is not None:
            consumer.close()
        server.stop()
