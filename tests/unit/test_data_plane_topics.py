"""Topic catalog persistence, CreateTopics / DeleteTopics errors, Metadata auto-creation."""

from __future__ import annotations

import json
import os
import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.data_plane.file_catalog_store import CATALOG_FILE, FileCatalogStore
from coordinator.data_plane.topic_catalog import TopicCatalog
from protocol.apis import ApiKey
from storage.batch import build_batch
from tests.support.data_plane import Plane, batch, creatable, create_many, ms, req

ZERO = uuid.UUID(int=0)


async def test_catalog_persists_atomically_and_survives_restart(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        created = await plane.create("orders", 3, {"retention.ms": "1000", "cleanup.policy": "compact"})
        await plane.create("gone", 1)
        keyed = build_batch([(b"k", b"x", 1_000)])  # a compacted topic refuses keyless records
        assert (await plane.produce("orders", 2, keyed)).error_code == ErrorCode.none
        response = await plane.call(req(ApiKey.DELETE_TOPICS, 4, topic_names=["gone"], timeout=ms(1000)))
        assert response.responses[0].error_code == ErrorCode.none
    stored = json.loads((tmp_path / CATALOG_FILE).read_text())
    assert [t["name"] for t in stored["topics"]] == ["orders"]
    assert not (tmp_path / (CATALOG_FILE + ".tmp")).exists()
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith(("orders-", "gone-"))) == \
        ["orders-0", "orders-1", "orders-2"]

    reloaded = TopicCatalog("test-cluster-id-00000A", 50, FileCatalogStore(str(tmp_path)))
    topic = reloaded.get("orders")
    assert (topic.topic_id, topic.partitions) == (created.topic_id, 3)
    assert topic.config_map() == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert reloaded.get("gone") is None and reloaded.by_id(created.topic_id) is topic
    assert reloaded.get("__consumer_offsets").internal  # the existing API still works

    async with Plane(str(tmp_path)) as again:
        part = await again.fetch("orders", 2, 0)
        assert part.error_code == ErrorCode.none and part.high_watermark == 1


async def test_create_topics_errors(tmp_path):
    async with Plane(str(tmp_path), **{"num.partitions": "2"}) as plane:
        await plane.create("exists")
        await plane.create("a.b")
        got = await create_many(plane, [
            creatable("dup"), creatable("dup"), creatable("bad name!"), creatable("exists"),
            creatable("__consumer_offsets"), creatable("rf3", rf=3), creatable("rf0", rf=0),
            creatable("p0", partitions=0), creatable("pneg", partitions=-5), creatable("huge", partitions=100000),
            creatable("cfg", configs={"no.such.config": "1"}), creatable("cfgval", configs={"retention.ms": "soon"}),
            creatable("ts", configs={"message.timestamp.type": "Never"}), creatable("a_b"),
            creatable("defaults", partitions=-1, rf=-1), creatable("manual", partitions=-1, rf=-1,
                                                                 assignments=[(0, [1]), (1, [1])]),
            creatable("manual-bad", partitions=-1, rf=-1, assignments=[(0, [7])]),
            creatable("manual-mixed", partitions=2, rf=-1, assignments=[(0, [1])]),
        ])
        codes = {name: t.error_code for name, t in got.items()}
        assert codes == {
            "dup": ErrorCode.invalid_request, "bad name!": ErrorCode.invalid_topic_exception,
            "exists": ErrorCode.topic_already_exists, "__consumer_offsets": ErrorCode.topic_already_exists,
            "rf3": ErrorCode.invalid_replication_factor, "rf0": ErrorCode.invalid_replication_factor,
            "p0": ErrorCode.invalid_partitions, "pneg": ErrorCode.invalid_partitions,
            "huge": ErrorCode.invalid_partitions, "cfg": ErrorCode.invalid_config,
            "cfgval": ErrorCode.invalid_config, "ts": ErrorCode.invalid_config,
            "a_b": ErrorCode.invalid_topic_exception, "defaults": ErrorCode.none, "manual": ErrorCode.none,
            "manual-bad": ErrorCode.invalid_replica_assignment, "manual-mixed": ErrorCode.invalid_request,
        }
        assert got["dup"].error_message == "Duplicate topic name."
        assert got["exists"].error_message == "Topic 'exists' already exists."
        for name, topic in got.items():
            if topic.error_code != ErrorCode.none:
                assert (topic.num_partitions, topic.replication_factor) == (-1, -1), name
                assert topic.topic_id in (None, ZERO), name
                assert not topic.configs, name
        assert (got["defaults"].num_partitions, got["defaults"].replication_factor) == (2, 1)
        assert got["manual"].num_partitions == 2
        assert plane.data.catalog.get("cfg") is None and plane.data.partition("rf3", 0) is None
        assert not (tmp_path / "cfg-0").exists()


async def test_create_topics_v5_fields_validate_only_and_v2_shape(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        got = await create_many(plane, [creatable("t", 4, configs={"max.message.bytes": "2000"})])
        result = got["t"]
        assert result.error_code == ErrorCode.none and result.topic_id not in (None, ZERO)
        assert (result.num_partitions, result.replication_factor) == (4, 1)
        configs = {c.name: (c.value, c.config_source) for c in result.configs}
        assert configs["max.message.bytes"] == ("2000", 1)
        assert configs["segment.bytes"] == ("1073741824", 5)
        assert set(configs) >= {"cleanup.policy", "retention.ms", "message.timestamp.type"}

        checked = await create_many(plane, [creatable("only-checked", 2)], validate_only=True)
        assert checked["only-checked"].error_code == ErrorCode.none
        assert checked["only-checked"].num_partitions == 2
        assert plane.data.catalog.get("only-checked") is None and not (tmp_path / "only-checked-0").exists()

        v2 = await create_many(plane, [creatable("t")], version=2)
        assert v2["t"].error_code == ErrorCode.topic_already_exists and not hasattr(v2["t"], "num_partitions")


async def test_delete_topics_errors_and_recreate_is_empty(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        first = await plane.create("t", 2)
        await plane.create("u")
        assert (await plane.produce("t", 1, batch(b"a", b"b"))).base_offset == 0
        offsets_id = plane.data.catalog.get("__consumer_offsets").topic_id
        response = await plane.call(req(ApiKey.DELETE_TOPICS, 6, timeout=ms(1000), topics=[
            {"name": None, "topic_id": first.topic_id}, {"name": "nope", "topic_id": ZERO},
            {"name": None, "topic_id": uuid.uuid4()}, {"name": "__consumer_offsets", "topic_id": ZERO},
            {"name": None, "topic_id": offsets_id}, {"name": "u", "topic_id": ZERO}, {"name": "u", "topic_id": ZERO},
        ]))
        got = [(r.name, r.error_code) for r in response.responses]
        assert ("t", ErrorCode.none) in got
        assert ("nope", ErrorCode.unknown_topic_or_partition) in got
        assert (None, ErrorCode.unknown_topic_id) in got
        assert ("__consumer_offsets", ErrorCode.topic_deletion_disabled) in got  # by name
        assert (None, ErrorCode.topic_deletion_disabled) in got  # by id (Kafka answers by-id errors without a name)
        assert ("u", ErrorCode.invalid_request) in got and len(got) == 6
        assert plane.data.catalog.get("__consumer_offsets") is not None
        assert not (tmp_path / "t-0").exists() and not (tmp_path / "t-1").exists()
        assert (await plane.fetch("t", 1, 0)).error_code == ErrorCode.unknown_topic_or_partition

        v1 = await plane.call(req(ApiKey.DELETE_TOPICS, 1, topic_names=["t"], timeout=ms(1000)))
        assert v1.responses[0].error_code == ErrorCode.unknown_topic_or_partition

        again = await plane.create("t", 2)
        assert again.topic_id != first.topic_id
        assert (await plane.produce("t", 1, batch(b"c"))).base_offset == 0  # no data of the old topic


def metadata(name, allow=True, version=12):
    return req(ApiKey.METADATA, version, topics=[{"name": name, "topic_id": None}], allow_auto_topic_creation=allow,
               include_topic_authorized_operations=False, include_cluster_authorized_operations=False)


async def test_metadata_auto_creates_like_kafka(tmp_path):
    async with Plane(str(tmp_path), **{"num.partitions": "3"}) as plane:
        refused = await plane.call(metadata("auto", allow=False))
        assert refused.topics[0].error_code == ErrorCode.unknown_topic_or_partition
        first = await plane.call(metadata("auto"))
        assert first.topics[0].error_code == ErrorCode.leader_not_available and first.topics[0].partitions == ()
        second = await plane.call(metadata("auto"))
        assert second.topics[0].error_code == ErrorCode.none
        assert [(p.partition_index, p.leader_id) for p in second.topics[0].partitions] == [(0, 1), (1, 1), (2, 1)]
        old = await plane.call(metadata("auto-v3", version=3))  # before v4 creation is always allowed
        assert old.topics[0].error_code == ErrorCode.leader_not_available


async def test_auto_create_disabled(tmp_path):
    async with Plane(str(tmp_path), **{"auto.create.topics.enable": "false"}) as plane:
        assert (await plane.call(metadata("x"))).topics[0].error_code == ErrorCode.unknown_topic_or_partition
        assert (await plane.produce("x", 0, batch(b"a"))).error_code == ErrorCode.unknown_topic_or_partition
        assert plane.data.catalog.get("x") is None


@pytest.mark.parametrize("bad", ["", "..", "a" * 250, "sp ace"])
async def test_invalid_topic_names_are_not_created(tmp_path, bad):
    async with Plane(str(tmp_path)) as plane:
        got = await create_many(plane, [creatable(bad)])
        assert got[bad].error_code == ErrorCode.invalid_topic_exception


async def test_recreate_while_delete_finishes_keeps_the_new_topic(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, batch(b"old"))
        pending = plane.send(req(ApiKey.DELETE_TOPICS, 4, topic_names=["t"], timeout=ms(1000)))
        fresh = await plane.produce("t", 0, batch(b"new"))  # auto-created before the removal ran
        assert (fresh.error_code, fresh.base_offset) == (ErrorCode.none, 0)
        request = req(ApiKey.DELETE_TOPICS, 4, topic_names=["t"], timeout=ms(1000))
        assert (await plane.resolve(request, pending)).responses[0].error_code == ErrorCode.none
        assert (tmp_path / "t-0").is_dir() and not any(p.endswith("-delete") for p in os.listdir(tmp_path))
        assert (await plane.fetch("t", 0, 0)).high_watermark == 1
