"""Topic administration of our server through two real admin clients: the Java Admin client (kafka-clients
3.9.1, tests/clients/java/AdminOps.java) and confluent-kafka's AdminClient (tests/clients/admin.py). One server
for the module, each test on its own topics and groups; every block records its cell of the compatibility table:

- admin-configs: CreateTopics with 14 topic configs; DescribeConfigs shows each value with source
  DYNAMIC_TOPIC_CONFIG; IncrementalAlterConfigs SET / DELETE / APPEND / SUBTRACT; confluent-kafka also the legacy
  AlterConfigs (which replaces the topic's whole set of configs, as in Kafka); the broker's log.dirs read-only;
- admin-grow: CreatePartitions 2 -> 4 while a group of 2 consumers of the same client library consumes: the group
  rebalances onto all 4 partitions and every record, before and after, is consumed exactly once; shrinking is
  refused (INVALID_PARTITIONS);
- admin-delete-records: DeleteRecords before offset 12 of a 20-record partition answers low watermark 12;
  ListOffsets earliest answers 12 (latest 20); a new group with auto.offset.reset=earliest starts at 12;
- admin-cluster: DescribeCluster answers the cluster id of log.dirs/meta.properties and the one node (controller);
- admin-log-dirs: DescribeLogDirs (Java; confluent-kafka has none: n/a) lists log.dirs with the topic's
  partitions and sizes > 0;
- admin-unknown-commit: AlterConsumerGroupOffsets (OffsetCommit) to a topic the server does not host answers
  UNKNOWN_TOPIC_OR_PARTITION and stores nothing; to a hosted topic it succeeds.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.clients import compat
from tests.clients.admin import admin_client
from tests.clients.drivers import CLIENTS, run_consumer
from tests.clients.our_server import RestartableServer
from tests.clients.process import ClientProcess
from tests.clients.produce import committed_offsets, produce
from tests.clients.scenarios import assert_exactly_once, stop_all, wait_consumed, wait_stable

TOPIC_ADMIN_CLIENTS = ("java", "confluent")
TOPIC_FEATURES = ("admin-configs", "admin-grow", "admin-delete-records", "admin-cluster", "admin-log-dirs",
                  "admin-unknown-commit")
NOT_DRIVEN = "not driven (the topic admin tests use the Java Admin and confluent-kafka's AdminClient)"

CONFIGS = {
    "cleanup.policy": "delete", "retention.ms": "3600000", "retention.bytes": "1048576",
    "segment.bytes": "1048576", "segment.ms": "600000", "max.message.bytes": "200000",
    "min.insync.replicas": "1", "compression.type": "zstd", "message.timestamp.type": "LogAppendTime",
    "min.cleanable.dirty.ratio": "0.2", "delete.retention.ms": "1000", "preallocate": "false",
    "unclean.leader.election.enable": "false", "index.interval.bytes": "8192",
}
DYNAMIC, DEFAULT = "DYNAMIC_TOPIC_CONFIG", "DEFAULT_CONFIG"
# Java consumers refresh metadata every 5 minutes by default, librdkafka every 5 minutes too: the growth would be
# seen that late. Both are the client's own settings for noticing new partitions.
REFRESH = {"java": {"metadata.max.age.ms": "1000"}, "confluent": {"topic.metadata.refresh.interval.ms": 1000}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = RestartableServer(str(tmp_path_factory.mktemp("ours-admin-topics") / "data"))
    try:
        yield server
    finally:
        code = server.close()
    assert code == 0, f"server exited with {code}; log tail:\n  {server.tail()}"


def test_clients_without_topic_admin_tests_are_marked():
    for client in CLIENTS:
        if client not in TOPIC_ADMIN_CLIENTS:
            compat.mark(client, TOPIC_FEATURES, "n/a", NOT_DRIVEN)


@pytest.mark.parametrize("client", TOPIC_ADMIN_CLIENTS)
def test_admin_configs(client, server):
    topic = f"cfg-{client}"
    with compat.record(client, "admin-configs"):
        admin = admin_client(client, server.bootstrap)
        admin.create_topic(topic, 2, CONFIGS)
        got = admin.describe_configs("topic", topic)
        for name, value in CONFIGS.items():
            e = got[name]
            assert (e.value, e.source, e.read_only, e.sensitive) == (value, DYNAMIC, False, False), (name, e)
        assert got["flush.ms"].source == DEFAULT, got["flush.ms"]

        admin.incremental_alter_configs("topic", topic, set={"segment.ms": "7200000"}, delete=["retention.ms"],
                                        append={"cleanup.policy": "compact"})
        got = admin.describe_configs("topic", topic)
        assert (got["segment.ms"].value, got["segment.ms"].source) == ("7200000", DYNAMIC), got["segment.ms"]
        assert (got["retention.ms"].value, got["retention.ms"].source) == ("604800000", DEFAULT), got["retention.ms"]
        assert (got["cleanup.policy"].value, got["cleanup.policy"].source) == ("delete,compact", DYNAMIC)
        unchanged = set(CONFIGS) - {"segment.ms", "retention.ms", "cleanup.policy"}
        assert {n: (got[n].value, got[n].source) for n in unchanged} == {n: (CONFIGS[n], DYNAMIC) for n in unchanged}

        admin.incremental_alter_configs("topic", topic, subtract={"cleanup.policy": "compact"})
        assert admin.describe_configs("topic", topic)["cleanup.policy"].value == "delete"

        if client == "confluent":  # the legacy AlterConfigs replaces the whole set (Java: deprecated, not driven)
            admin.alter_configs("topic", topic, {"retention.ms": "5000"})
            got = admin.describe_configs("topic", topic)
            assert (got["retention.ms"].value, got["retention.ms"].source) == ("5000", DYNAMIC)
            assert {n for n, e in got.items() if e.source == DYNAMIC} == {"retention.ms"}, \
                {n: e.value for n, e in got.items() if e.source == DYNAMIC}
            assert got["segment.ms"].value == "604800000"

        broker = admin.describe_configs("broker", "1")
        log_dirs = broker["log.dirs"]
        assert log_dirs.read_only and os.path.realpath(log_dirs.value) == os.path.realpath(server.log_dir), log_dirs


@pytest.mark.parametrize("client", TOPIC_ADMIN_CLIENTS)
def test_admin_grow(client, server):
    topic, group = f"grow-{client}", f"grow-group-{client}"
    members: list[ClientProcess] = []
    with compat.record(client, "admin-grow"):
        try:
            admin = admin_client(client, server.bootstrap)
            admin.create_topic(topic, 2)
            members = [run_consumer(client, server.bootstrap, group, topic, extra=REFRESH[client])
                       for _ in range(2)]
            wait_stable(members, topic, 2)
            before = produce(server.bootstrap, topic, 2, 40)
            wait_consumed(members, 40)

            admin.create_partitions(topic, 4)
            with pytest.raises(Exception, match="(?i)invalid.?partitions"):
                admin.create_partitions(topic, 3)
            wait_stable(members, topic, 4)
            after = produce(server.bootstrap, topic, 4, 80, start=40)
            wait_consumed(members, 120)
            sent = {p: before.get(p, []) + after[p] for p in range(4)}
            assert_exactly_once(members, sent)
            stop_all(members)
        finally:
            for m in members:
                m.kill()


@pytest.mark.parametrize("client", TOPIC_ADMIN_CLIENTS)
def test_admin_delete_records(client, server):
    topic, group = f"trunc-{client}", f"trunc-group-{client}"
    members: list[ClientProcess] = []
    with compat.record(client, "admin-delete-records"):
        try:
            admin = admin_client(client, server.bootstrap)
            admin.create_topic(topic, 1)
            produce(server.bootstrap, topic, 1, 20)
            assert admin.delete_records(topic, 0, 12) == 12
            assert admin.list_offsets(topic, 1, "earliest") == {0: 12}
            assert admin.list_offsets(topic, 1, "latest") == {0: 20}
            members = [run_consumer(client, server.bootstrap, group, topic)]
            wait_consumed(members, 8)
            stop_all(members)
            got = [(r["offset"], r["value"]) for r in members[0].records]
            assert got == [(o, str(o)) for o in range(12, 20)], got
        finally:
            for m in members:
                m.kill()


@pytest.mark.parametrize("client", TOPIC_ADMIN_CLIENTS)
def test_admin_cluster_and_log_dirs(client, server):
    topic = f"dirs-{client}"
    admin = admin_client(client, server.bootstrap)
    with compat.record(client, "admin-cluster"):
        meta = Path(server.log_dir, "meta.properties").read_text()
        cluster_id = dict(line.split("=", 1) for line in meta.splitlines() if "=" in line)["cluster.id"]
        described = admin.describe_cluster()
        assert described.cluster_id == cluster_id, (described, cluster_id)
        assert described.nodes == [(1, server.current.host, server.current.port)], described
        assert described.controller == 1, described
    with compat.record(client, "admin-log-dirs"):
        admin.create_topic(topic, 3)
        produce(server.bootstrap, topic, 3, 30)
        dirs = admin.describe_log_dirs()
        assert [os.path.realpath(d) for d in dirs] == [os.path.realpath(server.log_dir)], dirs
        (partitions,) = dirs.values()
        sizes = {p: size for (t, p), size in partitions.items() if t == topic}
        assert set(sizes) == {0, 1, 2} and all(size > 0 for size in sizes.values()), partitions


@pytest.mark.parametrize("client", TOPIC_ADMIN_CLIENTS)
def test_admin_unknown_commit(client, server):
    topic, group = f"known-{client}", f"unknown-commit-{client}"
    with compat.record(client, "admin-unknown-commit"):
        admin = admin_client(client, server.bootstrap)
        admin.create_topic(topic, 1)
        missing = f"no-such-topic-{client}"
        assert admin.alter_group_offsets(group, missing, 0, 5) == "UNKNOWN_TOPIC_OR_PARTITION"
        assert committed_offsets(server.bootstrap, group, missing, 1) == {0: -1001}
        assert admin.alter_group_offsets(group, topic, 0, 0) is None
        assert committed_offsets(server.bootstrap, group, topic, 1) == {0: 0}
