"""A bulk load that serves (docs/SPARK_JOBS.md, "Migrating from Kafka"): offsets committed by real clients to one
server, its `__consumer_offsets-*` directories copied as a Kafka broker's would be (our log is Kafka's bytes, so it
stands in for a broker's), `spark_jobs.bulk_load` run on the copy, and a NEW server on an EMPTY log.dirs started
on the snapshots: every group's offsets (confluent-kafka's AdminClient: OffsetFetch) and the real consumer group
(DescribeGroups) are there, each partition's log starts at the offset its snapshot covers, and new commits on it
survive a kill -9 and a restart. The same with the snapshots as the new server's log.dirs (the tree bulk_load
--output writes, copied: the same files)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.clients import committed_offsets, create_topic, produce, run_consumer
from tests.clients.admin import ConfluentAdmin
from tests.clients.scenarios import stop_all, wait_committed, wait_stable
from tests.support.server_process import ROOT, ServerProcess, start_server

pytestmark = pytest.mark.integration

TOPIC, PARTITIONS = "orders", 3
ADMIN_GROUPS = 200
SETTINGS = {"group.initial.rebalance.delay.ms": "300"}


def bootstrap(server: ServerProcess) -> str:
    return f"{server.host}:{server.port}"


def started(log_dir: str, **overrides: str) -> ServerProcess:
    server = start_server(log_dir, overrides={**SETTINGS, **overrides})
    server.wait_for_event("offsets partitions loaded", 60)
    return server


def alter_offsets(admin: ConfluentAdmin, offsets: dict[str, dict[int, int]]) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    for group, by_partition in offsets.items():
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(TOPIC, p, o) for p, o in by_partition.items()])
        for future in admin.admin.alter_consumer_group_offsets([request], request_timeout=20).values():
            future.result(30)


def committed_state(server: ServerProcess, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    admin = ConfluentAdmin(bootstrap(server))
    return {group: admin.offsets(group) for group in groups}


def write_the_old_log(server: ServerProcess) -> tuple[dict[str, dict[tuple[str, int], int]], dict]:
    """200 groups through the AdminClient (twice each: the log holds superseded commits) and one real consumer
    group; returns what every group has committed, as OffsetFetch answers it, and ListGroups."""
    create_topic(bootstrap(server), TOPIC, PARTITIONS)
    admin = ConfluentAdmin(bootstrap(server))
    first = {f"app-{i}": {i % PARTITIONS: i} for i in range(ADMIN_GROUPS)}
    alter_offsets(admin, first)
    alter_offsets(admin, {group: {p: o + 1000 for p, o in by_p.items()} for group, by_p in first.items()})
    sent = produce(bootstrap(server), TOPIC, PARTITIONS, 90)
    consumer = run_consumer("confluent", bootstrap(server), "real-app", TOPIC)
    try:
        wait_stable([consumer], TOPIC, PARTITIONS)
        wait_committed([consumer], TOPIC, {p: len(values) for p, values in sent.items()})
    finally:
        stop_all([consumer])
    groups = [*first, "real-app"]
    state = committed_state(server, groups)
    assert state["app-7"] == {(TOPIC, 1): 1007} and state["real-app"] == {(TOPIC, p): 30 for p in range(3)}
    return state, admin.list_groups()


def bulk_load(inputs: str, output: str) -> str:
    done = subprocess.run([sys.executable, "-m", "spark_jobs.bulk_load", "--master", "local[2]",
                           "--shuffle-partitions", "2", "--conf", "spark.ui.enabled=false",
                           "--input", inputs, "--output", output],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def test_a_fresh_server_on_a_bulk_load_serves_every_group_and_continues_its_logs(tmp_path):
    old = start_server(str(tmp_path / "old"), overrides=SETTINGS)
    try:
        before, listed_before = write_the_old_log(old)
        assert old.stop() == 0
    finally:
        old.kill()
    broker = tmp_path / "kafka-broker-copy"  # what an operator copies from a Kafka broker: the offsets dirs only
    for name in os.listdir(tmp_path / "old"):
        if name.startswith("__consumer_offsets-"):
            shutil.copytree(tmp_path / "old" / name, broker / name)
    snapshots = str(tmp_path / "snapshots")
    printed = bulk_load(str(broker), snapshots)
    assert f"offsets.snapshot.dir={os.path.abspath(snapshots)}" in printed  # it says how to start a server on it
    per_partition = [int(m.group(1)) for m in re.finditer(r"\d+: \d+ group\(s\), (\d+) offset\(s\), \d+", printed)]
    assert sum(per_partition) == ADMIN_GROUPS + PARTITIONS  # ... and what each partition's snapshot holds

    with_snapshot = {int(name.rsplit("-", 1)[1]) for name in os.listdir(snapshots)
                     if glob.glob(os.path.join(snapshots, name, "snapshot-*"))}
    assert with_snapshot
    for variant in ("offsets.snapshot.dir", "log.dirs"):
        data = str(tmp_path / f"new-{variant}")
        settings = {"offsets.snapshot.dir": snapshots} if variant == "offsets.snapshot.dir" else {}
        if variant == "log.dirs":
            shutil.copytree(snapshots, data)
        server = started(data, **settings)
        try:
            chosen = {e["partition"]: e for e in server.events("offsets snapshot chosen")}
            assert set(chosen) == with_snapshot  # one line per partition that has a snapshot
            covered = [e for e in chosen.values() if "its log starts at offset" in e["why"]]
            assert covered and all(e["snapshot"] for e in covered), chosen
            assert committed_state(server, list(before)) == before, variant
            described = ConfluentAdmin(bootstrap(server)).describe("real-app")
            assert (described.state, described.members) == ("Empty", {})
            assert ConfluentAdmin(bootstrap(server)).list_groups() == listed_before

            create_topic(bootstrap(server), TOPIC, PARTITIONS)
            alter_offsets(ConfluentAdmin(bootstrap(server)), {"app-7": {1: 5007}, "real-app": {0: 31}})
            server.kill()  # kill -9: the new commits must already be durable
            server = started(data, **settings)
            after = committed_state(server, list(before))
            expected = {**before, "app-7": {(TOPIC, 1): 5007}, "real-app": {**before["real-app"], (TOPIC, 0): 31}}
            assert after == expected, variant
            assert committed_offsets(bootstrap(server), "real-app", TOPIC, PARTITIONS) == {0: 31, 1: 30, 2: 30}
            assert server.stop() == 0
        finally:
            server.kill()
