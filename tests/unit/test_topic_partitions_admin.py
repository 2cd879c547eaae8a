"""CreatePartitions and DescribeTopicPartitions, in process (local mode)."""

from __future__ import annotations

import json
import os

from kio.schema.errors import ErrorCode

from coordinator.data_plane.file_catalog_store import CATALOG_FILE, FileCatalogStore
from coordinator.data_plane.topic_catalog import TopicCatalog
from protocol.apis import ApiKey
from tests.support.data_plane import Plane, batch, ms, req


def grow(*topics, validate_only=False, version=3):
    return req(ApiKey.CREATE_PARTITIONS, version, timeout=ms(1000), validate_only=validate_only,
               topics=[{"name": name, "count": count, "assignments": assignments}
                       for name, count, assignments in topics])


async def metadata_count(plane, topic):
    response = await plane.call(req(ApiKey.METADATA, 12, topics=[{"name": topic, "topic_id": None}],
                                    allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return len(response.topics[0].partitions)


async def test_create_partitions_grows_topic_and_opens_logs(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("orders", 2)
        answer = await plane.call(grow(("orders", 5, None)))
        assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [("orders", ErrorCode.none, None)]
        assert await metadata_count(plane, "orders") == 5
        assert (await plane.produce("orders", 4, batch(b"x"))).error_code == ErrorCode.none
        assert (await plane.fetch("orders", 4, 0)).high_watermark == 1
        assert os.path.isdir(tmp_path / "orders-4")
    stored = json.loads((tmp_path / CATALOG_FILE).read_text())
    assert stored["topics"][0]["partitions"] == 5
    assert TopicCatalog("test-cluster-id-00000A", 50, FileCatalogStore(str(tmp_path))).get("orders").partitions == 5
    async with Plane(str(tmp_path)) as again:  # reopened at the next start
        assert (await again.fetch("orders", 4, 0)).high_watermark == 1


async def test_create_partitions_errors_as_kafka(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 2)
        answer = await plane.call(grow(
            ("dup", 3, None), ("dup", 4, None), ("missing", 3, None), ("t", 2, None), ("t2", 1, None),
            ("__consumer_offsets", 60, None)))
        got = {r.name: (r.error_code, r.error_message) for r in answer.results}
        assert answer.results[0].name == "dup"  # duplicates answered first
        assert got["dup"] == (ErrorCode.invalid_request, "Duplicate topic name.")
        assert got["missing"] == (ErrorCode.unknown_topic_or_partition, None)
        assert got["t"] == (ErrorCode.invalid_partitions, "Topic already has 2 partition(s).")
        assert got["__consumer_offsets"][0] == ErrorCode.invalid_partitions

        def one(count, assignments=None):
            return plane.call(grow(("t", count, assignments)))

        shrink = (await one(1)).results[0]
        assert (shrink.error_code, shrink.error_message) == (
            ErrorCode.invalid_partitions, "The topic t currently has 2 partition(s); 1 would not be an increase.")
        manual = "The manual partition assignment includes"
        cases = {
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.": [[1]],
            f"{manual} an empty replica list.": [[]],
            f"{manual} broker 7, but no such broker is registered.": [[7]],
            f"{manual} the broker 1 more than once.": [[1, 1]],
        }
        for message, assignments in cases.items():
            count = 4 if message.startswith("Attempted") else 3
            result = (await one(count, [{"broker_ids": b} for b in assignments])).results[0]
            assert (result.error_code, result.error_message) == (ErrorCode.invalid_replica_assignment, message)
        too_many = (await one(100_000)).results[0]
        assert too_many.error_code == ErrorCode.invalid_partitions
        assert await metadata_count(plane, "t") == 2

        checked = (await plane.call(grow(("t", 3, [{"broker_ids": [1]}]), validate_only=True))).results[0]
        assert checked.error_code == ErrorCode.none and await metadata_count(plane, "t") == 2
        done = (await plane.call(grow(("t", 3, [{"broker_ids": [1]}]), version=0))).results[0]
        assert done.error_code == ErrorCode.none and await metadata_count(plane, "t") == 3


async def test_describe_topic_partitions_pages_with_cursor(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("a", 3)
        await plane.create("b", 2)

        async def page(names, limit, cursor=None):
            return await plane.call(req(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, topics=[{"name": n} for n in names],
                                        response_partition_limit=limit, cursor=cursor))

        first = await page(["b", "a", "nope", "bad name!"], 2)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in first.topics] == [("a", [0, 1])]
        assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("a", 2)
        second = await page(["b", "a", "nope", "bad name!"], 2, {"topic_name": "a", "partition_index": 2})
        assert [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in second.topics] == [
            ("a", ErrorCode.none, [2]), ("b", ErrorCode.none, [0])]
        assert (second.next_cursor.topic_name, second.next_cursor.partition_index) == ("b", 1)
        rest = await page(["b", "a", "nope", "bad name!"], 10, {"topic_name": "b", "partition_index": 1})
        assert [(t.name, t.error_code) for t in rest.topics] == [
            ("b", ErrorCode.none), ("bad name!", ErrorCode.invalid_topic_exception),
            ("nope", ErrorCode.unknown_topic_or_partition)]
        assert rest.next_cursor is None
        part = rest.topics[0].partitions[0]
        assert (part.leader_id, part.leader_epoch, part.replica_nodes, part.isr_nodes) == (1, 0, (1,), (1,))
        everything = await page([], 2000)
        assert [t.name for t in everything.topics] == ["__consumer_offsets", "a", "b"]
        assert everything.topics[0].is_internal
        full = await page(["a"], 3)  # the limit reached at a topic's end: the next topic starts the cursor
        assert full.next_cursor is None
        two = await page(["a", "b"], 3)
        assert (two.next_cursor.topic_name, two.next_cursor.partition_index) == ("b", 0)
        bad = await page(["a"], 10, {"topic_name": "b", "partition_index": 0})
        assert [(t.name, t.error_code) for t in bad.topics] == [("a", ErrorCode.invalid_request)]
        bad = await page(["a"], 10, {"topic_name": "a", "partition_index": -1})
        assert bad.topics[0].error_code == ErrorCode.invalid_request
