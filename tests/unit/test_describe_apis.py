"""DescribeCluster, DescribeLogDirs, OffsetForLeaderEpoch and DescribeProducers, in process (local mode)."""

from __future__ import annotations

import os

from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from tests.support.data_plane import Plane, batch, req

NOT_REQUESTED = -(2**31)


async def test_describe_cluster(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        got = await plane.call(req(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False,
                                   endpoint_type=1))
        assert (got.error_code, got.cluster_id, got.controller_id, got.endpoint_type) == (
            ErrorCode.none, "test-cluster-id-00000A", 1, 1)
        assert [(b.broker_id, b.host, b.port, b.rack) for b in got.brokers] == [(1, "broker.test", 9092, None)]
        assert got.cluster_authorized_operations == NOT_REQUESTED
        v0 = await plane.call(req(ApiKey.DESCRIBE_CLUSTER, 0, include_cluster_authorized_operations=True))
        assert v0.error_code == ErrorCode.none and v0.cluster_authorized_operations > 0
        controllers = await plane.call(req(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False,
                                           endpoint_type=2))
        assert (controllers.error_code, controllers.error_message) == (
            ErrorCode.mismatched_endpoint_type,
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
        other = await plane.call(req(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False,
                                     endpoint_type=7))
        assert (other.error_code, other.error_message) == (ErrorCode.unsupported_endpoint_type,
                                                           "Unsupported endpoint type 7")


async def test_describe_log_dirs(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("a", 2)
        await plane.create("b", 1)
        assert (await plane.produce("a", 1, batch(b"x" * 100))).error_code == ErrorCode.none
        everything = await plane.call(req(ApiKey.DESCRIBE_LOG_DIRS, 4, topics=None))
        result = everything.results[0]
        assert (result.error_code, result.log_dir) == (ErrorCode.none, os.path.abspath(tmp_path))
        assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
        sizes = {(t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
                 for t in result.topics for p in t.partitions}
        assert sizes[("a", 0)] == (0, 0, False) and sizes[("b", 0)] == (0, 0, False)
        assert sizes[("a", 1)][0] > 100
        some = await plane.call(req(ApiKey.DESCRIBE_LOG_DIRS, 1, topics=[
            {"topic": "a", "partitions": [1, 5]}, {"topic": "nope", "partitions": [0]}]))
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in some.results[0].topics] == [("a", [1])]


async def test_offset_for_leader_epoch(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 1)
        for _ in range(3):
            assert (await plane.produce("t", 0, batch(b"x"))).error_code == ErrorCode.none

        async def ask(epoch, current=-1, partition=0, topic="t", version=4):
            got = await plane.call(req(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, replica_id=-1, topics=[
                {"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": current,
                                                 "leader_epoch": epoch}]}]))
            p = got.topics[0].partitions[0]
            return p.error_code, p.leader_epoch, p.end_offset

        assert await ask(0) == (ErrorCode.none, 0, 3)
        assert await ask(0, current=0, version=2) == (ErrorCode.none, 0, 3)
        assert await ask(1) == (ErrorCode.none, -1, -1)  # above every known epoch
        assert await ask(-1) == (ErrorCode.none, -1, -1)
        assert (await ask(0, current=1))[0] == ErrorCode.unknown_leader_epoch
        assert (await ask(0, current=-5))[0] == ErrorCode.fenced_leader_epoch
        assert (await ask(0, partition=3))[0] == ErrorCode.unknown_topic_or_partition
        assert (await ask(0, topic="nope"))[0] == ErrorCode.unknown_topic_or_partition


async def test_describe_producers(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 2)
        first = batch(b"a", b"b", producer_id=42, producer_epoch=3, base_sequence=0, ts=5_000)
        assert (await plane.produce("t", 0, first)).error_code == ErrorCode.none
        assert (await plane.produce("t", 0, batch(b"c", producer_id=42, producer_epoch=3, base_sequence=2,
                                                  ts=6_000))).error_code == ErrorCode.none
        assert (await plane.produce("t", 0, batch(b"plain"))).error_code == ErrorCode.none
        got = await plane.call(req(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[
            {"name": "t", "partition_indexes": [0, 1, 9]}, {"name": "nope", "partition_indexes": [0]},
            {"name": "bad name!", "partition_indexes": [0]}]))
        t, nope, bad = got.topics
        p0, p1, p9 = t.partitions
        assert [(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp, s.coordinator_epoch,
                 s.current_txn_start_offset) for s in p0.active_producers] == [(42, 3, 2, 6_000, -1, -1)]
        assert (p1.error_code, p1.active_producers) == (ErrorCode.none, ())
        assert p9.error_code == ErrorCode.unknown_topic_or_partition
        assert (nope.partitions[0].error_code, nope.partitions[0].error_message) == (
            ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition.")
        assert bad.partitions[0].error_code == ErrorCode.invalid_topic_exception
