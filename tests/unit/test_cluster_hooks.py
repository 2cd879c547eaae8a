"""The Reconciler's hooks route each partition to the offsets runtime or the data plane, and the supervisor
unloads a partition whose PostgreSQL log broke and has the Reconciler take it again."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from coordinator.cluster.log_supervisor import LogSupervisor
from coordinator.cluster.partition_hooks import PartitionHooks
from coordinator.data_plane.topic_catalog import TopicCatalog, TopicInfo
from storage.placement import OFFSETS_TOPIC


class FakeLog:
    def __init__(self, key: tuple) -> None:
        self.key = key
        self.failed: BaseException | None = None
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class FakeLogs:
    """A LogFactory of FakeLogs, recording what was opened."""

    def __init__(self, catalog) -> None:
        self.catalog = catalog
        self.opened: list[tuple] = []

    async def open_offsets_partition(self, partition, epoch):
        return await self.open_topic_partition(self.catalog.get(OFFSETS_TOPIC), partition, epoch)

    async def open_topic_partition(self, topic, index, epoch):
        self.opened.append((topic.name, index, epoch))
        return FakeLog((topic.name, index, epoch))


class Recorder:
    """Stands in for OffsetsRuntime and DataPlane: records what the hooks asked."""

    def __init__(self, fail_take: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail_take = fail_take

    async def take(self, partition, log):
        self.calls.append(("offsets.take", partition, log.key))
        if self.fail_take:
            raise RuntimeError("load failed")

    async def give_up(self, partition):
        self.calls.append(("offsets.give_up", partition))

    def lost(self, partition):
        self.calls.append(("offsets.lost", partition))

    async def take_partition(self, topic, index, log, epoch):
        self.calls.append(("data.take", topic, index, log.key, epoch))

    async def give_up_partition(self, topic, index):
        self.calls.append(("data.give_up", topic, index))

    def lose_partition(self, topic, index):
        self.calls.append(("data.lost", topic, index))


class LateCatalog(TopicCatalog):
    """A catalog that learns of `later` topics only when refreshed (created by another node)."""

    def __init__(self, later: list[TopicInfo]) -> None:
        super().__init__("test-cluster-id-00000A", 3)
        self.later = later
        self.refreshed = 0

    async def refresh(self):
        self.refreshed += 1
        for topic in self.later:
            self._show(topic)
        return list(self.later), []


@pytest.fixture
def parts():
    orders = TopicInfo("orders", uuid.uuid4(), 2)
    catalog = LateCatalog([orders])
    recorder = Recorder()
    logs = FakeLogs(catalog)
    hooks = PartitionHooks(catalog, recorder, recorder, logs)
    return hooks, catalog, recorder, orders, logs.opened


def test_take_give_up_and_lose_route_offsets_and_topic_partitions(parts):
    hooks, catalog, recorder, orders, opened = parts
    offsets_id = catalog.get(OFFSETS_TOPIC).topic_id

    async def scenario():
        await hooks.take(offsets_id, 1, 7)
        await hooks.take(orders.topic_id, 0, 3)  # unknown until the catalog is refreshed
        await hooks.give_up(offsets_id, 1)
        hooks.lost(orders.topic_id, 0)
        hooks.lost(orders.topic_id, 0)  # already gone: nothing more
        await hooks.give_up(orders.topic_id, 1)  # never taken: nothing

    asyncio.run(scenario())
    assert opened == [(OFFSETS_TOPIC, 1, 7), ("orders", 0, 3)]
    assert catalog.refreshed == 1
    assert recorder.calls == [("offsets.take", 1, (OFFSETS_TOPIC, 1, 7)),
                              ("data.take", "orders", 0, ("orders", 0, 3), 0),  # the wire's leader epoch
                              ("offsets.give_up", 1), ("data.lost", "orders", 0)]
    assert hooks.owned == {}


def test_a_failed_take_closes_the_log_and_raises_for_the_reconciler_to_retry(parts):
    hooks, catalog, _recorder, _orders, _opened = parts
    hooks.offsets = Recorder(fail_take=True)
    logs = []

    async def open_offsets_partition(partition, epoch):
        logs.append(FakeLog((OFFSETS_TOPIC, partition, epoch)))
        return logs[-1]

    hooks.logs.open_offsets_partition = open_offsets_partition
    with pytest.raises(RuntimeError, match="load failed"):
        asyncio.run(hooks.take(catalog.get(OFFSETS_TOPIC).topic_id, 0, 1))
    assert logs[0].closed and hooks.owned == {}
    with pytest.raises(LookupError):
        asyncio.run(hooks.take(uuid.uuid4(), 0, 1))


def test_the_supervisor_unloads_broken_logs_and_has_them_retaken(parts):
    hooks, catalog, recorder, orders, _opened = parts
    offsets_id = catalog.get(OFFSETS_TOPIC).topic_id
    forgotten = []
    supervisor = LogSupervisor(hooks, forgotten.append)

    async def scenario():
        await hooks.take(offsets_id, 2, 5)
        await hooks.take(orders.topic_id, 1, 9)

    asyncio.run(scenario())
    assert supervisor.check() == 0
    hooks.owned[(orders.topic_id, 1)].log.failed = ConnectionError("PostgreSQL went away")
    recorder.calls.clear()
    assert supervisor.check() == 1
    assert recorder.calls == [("data.lost", "orders", 1)]
    assert forgotten == [(orders.topic_id, 1)]
    assert list(hooks.owned) == [(offsets_id, 2)]
    assert supervisor.check() == 0
