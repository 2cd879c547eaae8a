"""Replication factors (coordinator/data_plane/replication.py): cluster mode accepts a factor up to the number of
live nodes and names that many as each partition's replicas and ISR (the leader first); local mode keeps Kafka's
single-broker answer. In process: the real handlers and data plane, a fake cluster view whose live nodes change."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.app import build_dispatcher
from coordinator.cluster.view import Broker
from coordinator.data_plane.file_catalog_store import FileCatalogStore
from coordinator.data_plane.replication import replica_nodes
from coordinator.data_plane.topic_catalog import TopicCatalog
from protocol.apis import ApiKey
from tests.support.data_plane import Plane, creatable, create_many, ms, req

E = ErrorCode
CLUSTER_ID = "test-cluster-id-00000A"


class LiveNodes:
    """A fake ClusterView: the nodes in `live` are the brokers; partition p is led by the p-th of them."""

    def __init__(self, *live: int) -> None:
        self.live = list(live)

    def brokers(self) -> list[Broker]:
        return [Broker(n, f"n{n}.test", 9000 + n) for n in self.live]

    def controller_id(self) -> int:
        return min(self.live)

    def broker(self, node_id: int) -> Broker | None:
        return next((b for b in self.brokers() if b.node_id == node_id), None)

    def leader(self, topic: str, partition: int) -> int:
        return self.live[partition % len(self.live)]

    def leader_epoch(self, topic: str, partition: int) -> int:
        return 0

    def owns(self, topic: str, partition: int) -> bool:
        return True


def as_cluster(plane: Plane, view: LiveNodes) -> Plane:
    """The plane's handlers answer from `view`, and its data plane counts `view`'s live nodes."""
    plane.services.view = view
    plane.data.live_brokers = lambda: list(view.live)
    plane.dispatcher = build_dispatcher(plane.services)
    return plane


async def metadata_replicas(plane: Plane, topic: str) -> dict[int, tuple[int, tuple, tuple]]:
    response = await plane.call(req(ApiKey.METADATA, 12, topics=[{"name": topic, "topic_id": None}],
                                    allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    (answer,) = response.topics
    assert answer.error_code == E.none, answer
    return {p.partition_index: (p.leader_id, p.replica_nodes, p.isr_nodes) for p in answer.partitions}


async def described_replicas(plane: Plane, topic: str) -> dict[int, tuple[int, tuple, tuple]]:
    response = await plane.call(req(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, topics=[{"name": topic}],
                                    response_partition_limit=2000, cursor=None))
    (answer,) = response.topics
    return {p.partition_index: (p.leader_id, p.replica_nodes, p.isr_nodes) for p in answer.partitions}


async def grow(plane: Plane, topic: str, count: int, assignments=None) -> tuple[ErrorCode, str | None]:
    response = await plane.call(req(ApiKey.CREATE_PARTITIONS, 3, timeout=ms(1000), validate_only=False, topics=[
        {"name": topic, "count": count,
         "assignments": None if assignments is None else [{"broker_ids": b} for b in assignments]}]))
    (result,) = response.results
    return result.error_code, result.error_message


@pytest.mark.parametrize(
    ("leader", "live", "factor", "replicas"),
    [(2, [1, 2, 3], 3, [2, 3, 1]), (3, [1, 2, 3], 2, [3, 1]), (1, [1, 2, 3], 1, [1]), (2, [1, 2, 3], 5, [2, 3, 1]),
     (3, [1, 3], 3, [3, 1]), (7, [7], 3, [7])],
)
def test_replicas_are_the_leader_then_the_live_nodes_after_it(leader, live, factor, replicas):
    assert replica_nodes(leader, live, factor) == replicas


async def test_three_live_nodes_take_a_replication_factor_of_3_and_name_them_all(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        view = LiveNodes(1, 2, 3)
        as_cluster(plane, view)
        checked = await create_many(plane, [creatable("checked", 3, rf=3)], validate_only=True)
        assert (checked["checked"].error_code, checked["checked"].replication_factor) == (E.none, 3)
        got = await create_many(plane, [creatable("rf3", 3, rf=3), creatable("rf4", 3, rf=4),
                                        creatable("rf2", 2, rf=2)])
        assert (got["rf3"].error_code, got["rf3"].num_partitions, got["rf3"].replication_factor) == (E.none, 3, 3)
        assert (got["rf2"].error_code, got["rf2"].replication_factor) == (E.none, 2)
        assert (got["rf4"].error_code, got["rf4"].error_message) == (
            E.invalid_replication_factor, "Unable to replicate the partition 4 time(s): The target replication "
            "factor of 4 cannot be reached because only 3 broker(s) are registered.")
        want = {0: (1, (1, 2, 3), (1, 2, 3)), 1: (2, (2, 3, 1), (2, 3, 1)), 2: (3, (3, 1, 2), (3, 1, 2))}
        assert await metadata_replicas(plane, "rf3") == want
        assert await described_replicas(plane, "rf3") == want
        assert await metadata_replicas(plane, "rf2") == {0: (1, (1, 2), (1, 2)), 1: (2, (2, 3), (2, 3))}

        view.live = [1, 3]  # node 2 died: the lists shrink to the live nodes, the factor stays
        assert await metadata_replicas(plane, "rf3") == {0: (1, (1, 3), (1, 3)), 1: (3, (3, 1), (3, 1)),
                                                         2: (1, (1, 3), (1, 3))}
        assert await grow(plane, "rf3", 4) == (E.invalid_replication_factor, "The target replication factor of 3 "
                                                                             "cannot be reached because only 2 "
                                                                             "broker(s) are registered.")
        assert await grow(plane, "rf3", 4, [[1, 3]]) == (
            E.invalid_replica_assignment, "The manual partition assignment includes a partition with 2 replica(s), "
            "but this is not consistent with previous partitions, which have 3 replica(s).")
        assert await grow(plane, "rf3", 4, [[1, 2, 3]]) == (
            E.invalid_replica_assignment, "The manual partition assignment includes broker 2, but no such broker "
            "is registered.")
        assert await grow(plane, "rf2", 3) == (E.none, None)

        view.live = [1, 2, 3]  # back
        assert await grow(plane, "rf3", 5) == (E.none, None)
        assert (await metadata_replicas(plane, "rf3"))[4] == (2, (2, 3, 1), (2, 3, 1))


async def test_the_default_factor_and_a_manual_assignment_set_the_factor_kafkas_checks_and_messages(tmp_path):
    async with Plane(str(tmp_path), **{"default.replication.factor": "3"}) as plane:
        as_cluster(plane, LiveNodes(1, 2, 3))
        got = await create_many(plane, [
            creatable("defaulted", 2, rf=-1),
            creatable("manual", -1, rf=-1, assignments=[(0, [1, 2]), (1, [3, 1])]),
            creatable("uneven", -1, rf=-1, assignments=[(0, [1, 2]), (1, [3])]),
            creatable("twice", -1, rf=-1, assignments=[(0, [1, 1])]),
            creatable("unknown", -1, rf=-1, assignments=[(0, [4])]),
            creatable("same-index", -1, rf=-1, assignments=[(0, [1]), (0, [2])]),
            creatable("gap", -1, rf=-1, assignments=[(0, [1]), (2, [2])]),
            creatable("with-rf", -1, rf=2, assignments=[(0, [1, 2])]),
            creatable("with-count", 1, rf=-1, assignments=[(0, [1, 2])]),
            creatable("rf0", 1, rf=0), creatable("rf0-p0", 0, rf=0),
        ])
        answers = {name: (t.error_code, t.error_message) for name, t in got.items()}
        assert (got["defaulted"].error_code, got["defaulted"].replication_factor) == (E.none, 3)
        assert (got["manual"].error_code, got["manual"].num_partitions, got["manual"].replication_factor) == \
            (E.none, 2, 2)
        assert answers["uneven"] == (E.invalid_replica_assignment, "The manual partition assignment includes a "
                                     "partition with 1 replica(s), but this is not consistent with previous "
                                     "partitions, which have 2 replica(s).")
        assert answers["twice"] == (E.invalid_replica_assignment,
                                    "The manual partition assignment includes the broker 1 more than once.")
        assert answers["unknown"] == (E.invalid_replica_assignment, "The manual partition assignment includes "
                                      "broker 4, but no such broker is registered.")
        assert answers["same-index"] == (E.invalid_replica_assignment,
                                         "Found multiple manual partition assignments for partition 0")
        assert answers["gap"] == (E.invalid_replica_assignment,
                                  "partitions should be a consecutive 0-based integer sequence")
        assert answers["with-rf"] == (E.invalid_request, "A manual partition assignment was specified, but "
                                      "replication factor was not set to -1.")
        assert answers["with-count"] == (E.invalid_request, "A manual partition assignment was specified, but "
                                         "numPartitions was not set to -1.")
        rf0 = (E.invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default "
               "value.")
        assert answers["rf0"] == answers["rf0-p0"] == rf0  # Kafka checks the factor before the partition count
        assert (await metadata_replicas(plane, "manual"))[1] == (2, (2, 3), (2, 3))


async def test_local_mode_is_one_broker_a_factor_above_1_is_refused_as_kafka_refuses_it(tmp_path):
    async with Plane(str(tmp_path), **{"default.replication.factor": "2"}) as plane:
        got = await create_many(plane, [creatable("rf2", 1, rf=2), creatable("defaulted", 1, rf=-1),
                                        creatable("rf1", 2, rf=1)])
        assert (got["rf2"].error_code, got["rf2"].error_message) == (
            E.invalid_replication_factor, "Unable to replicate the partition 2 time(s): The target replication "
            "factor of 2 cannot be reached because only 1 broker(s) are registered.")
        assert got["defaulted"].error_code == E.invalid_replication_factor
        assert (got["rf1"].error_code, got["rf1"].replication_factor) == (E.none, 1)
        assert await metadata_replicas(plane, "rf1") == {0: (1, (1,), (1,)), 1: (1, (1,), (1,))}


async def test_internal_topics_name_as_many_live_nodes_as_their_replication_factor_setting(tmp_path):
    catalog = TopicCatalog(CLUSTER_ID, 50, FileCatalogStore(str(tmp_path)), offsets_replication_factor=3)
    async with Plane(str(tmp_path), catalog) as plane:
        view = as_cluster(plane, LiveNodes(1, 2, 3, 4)).services.view
        assert (await metadata_replicas(plane, "__consumer_offsets"))[1] == (2, (2, 3, 4), (2, 3, 4))
        view.live = [2, 4]
        assert (await metadata_replicas(plane, "__consumer_offsets"))[1] == (4, (4, 2), (4, 2))
