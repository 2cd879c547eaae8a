"""One request creates at most 10,000 metadata records' worth of topics (Kafka's
QuorumController.MAX_RECORDS_PER_USER_OP): past it the whole request answers POLICY_VIOLATION."""

from __future__ import annotations

import os

from kio.schema.errors import ErrorCode

from coordinator.data_plane.record_budget import EXCESSIVE_BATCH, MAX_RECORDS_PER_USER_OP, RecordBudget, topic_records
from protocol.apis import ApiKey
from tests.support.data_plane import Plane, creatable, create_many, req


def metadata(names):
    return req(ApiKey.METADATA, 12, topics=[{"name": n, "topic_id": None} for n in names],
               allow_auto_topic_creation=True, include_topic_authorized_operations=False,
               include_cluster_authorized_operations=False)


def test_budget_counts_like_kafkas_bounded_list():
    assert topic_records(partitions=3, configs=2) == 6  # TopicRecord + 2 ConfigRecords + 3 PartitionRecords
    budget = RecordBudget()
    assert budget.take(MAX_RECORDS_PER_USER_OP - 1) and budget.take(1) and not budget.exceeded
    assert not budget.take(1) and budget.exceeded


async def test_exactly_the_limit_passes_and_one_record_more_fails_the_whole_request(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        at_limit = [creatable(f"t{i}", partitions=999) for i in range(10)]  # 10 x (1 + 999) = 10,000
        got = await create_many(plane, at_limit, validate_only=True)
        assert {t.error_code for t in got.values()} == {ErrorCode.none}
        over = at_limit[:9] + [creatable("t9", partitions=999, configs={"retention.ms": "1000"})]  # + 1 ConfigRecord
        for validate_only in (True, False):
            got = await create_many(plane, over + [creatable("late")], validate_only=validate_only)
            assert [(name, t.error_code, t.error_message) for name, t in got.items()] == \
                [(n, ErrorCode.policy_violation, EXCESSIVE_BATCH) for n in [f"t{i}" for i in range(10)] + ["late"]]
            assert {(t.num_partitions, t.replication_factor) for t in got.values()} == {(-1, -1)}
        assert not [name for name in os.listdir(tmp_path) if name.startswith("t")]
        assert (await plane.create("t3", 2)).error_code == ErrorCode.none  # the names were given back


async def test_topics_refused_before_the_budget_do_not_count(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("exists")
        got = await create_many(plane, [creatable("exists", partitions=1000), creatable("bad", partitions=5000)]
                                + [creatable(f"t{i}", partitions=999) for i in range(10)], validate_only=True)
        assert got["exists"].error_code == ErrorCode.topic_already_exists
        assert got["bad"].error_code == ErrorCode.invalid_partitions
        assert {got[f"t{i}"].error_code for i in range(10)} == {ErrorCode.none}


async def test_auto_creation_past_the_budget_creates_nothing(tmp_path):
    async with Plane(str(tmp_path), **{"num.partitions": "1000"}) as plane:
        names = [f"auto{i}" for i in range(10)]  # 10 x 1,001 records
        response = await plane.call(metadata(names))
        assert {t.error_code for t in response.topics} == {ErrorCode.unknown_topic_or_partition}
        assert all(plane.data.catalog.get(name) is None for name in names)
        assert not [name for name in os.listdir(tmp_path) if name.startswith("auto")]
        one = await plane.call(metadata(["auto3"]))
        assert one.topics[0].error_code == ErrorCode.leader_not_available  # created: its name was given back
