"""The Reconciler's hooks route each partition to the offsets runtime, the transaction coordinator, the share
coordinator or the data plane (the share partitions going with their topic partitions), and the supervisor
unloads a partition whose PostgreSQL log broke and has the Reconciler take it again."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from coordinator.cluster.log_supervisor import LogSupervisor
from coordinator.cluster.partition_hooks import PartitionHooks, Runtime, runtime_of
from coordinator.data_plane.topic_catalog import TopicCatalog, TopicInfo
from rules.placement import OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC


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


class TxnRecorder:
    """Stands in for the TransactionCoordinator: records take/give_up/lost."""

    def __init__(self, fail_take: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail_take = fail_take

    async def take(self, partition, coordinator_epoch, log):
        self.calls.append(("txn.take", partition, coordinator_epoch, log.key))
        if self.fail_take:
            raise RuntimeError("replay failed")

    async def give_up(self, partition):
        self.calls.append(("txn.give_up", partition))

    def lost(self, partition):
        self.calls.append(("txn.lost", partition))


def txn_topic() -> TopicInfo:
    return TopicInfo(TRANSACTION_STATE_TOPIC, uuid.uuid4(), 3, internal=True)


def test_transaction_state_partitions_go_to_the_transaction_coordinator_at_the_ownership_epoch(parts):
    hooks, catalog, recorder, orders, opened = parts
    txn_state = txn_topic()
    catalog.later.append(txn_state)
    txn = hooks.txn = TxnRecorder()
    taken = []
    hooks.taken = taken.append
    offsets_id = catalog.get(OFFSETS_TOPIC).topic_id

    async def scenario():
        await hooks.take(txn_state.topic_id, 2, 11)
        await hooks.take(txn_state.topic_id, 0, 4)
        await hooks.take(orders.topic_id, 1, 3)
        await hooks.take(offsets_id, 0, 2)
        assert hooks.holds(TRANSACTION_STATE_TOPIC, 2) and hooks.holds("orders", 1)
        assert not hooks.holds("orders", 0) and not hooks.holds("nope", 1)
        assert hooks.holding(orders.topic_id, 1) == "orders" and hooks.holding(orders.topic_id, 0) is None
        plog = hooks.owned[(txn_state.topic_id, 0)].log
        await hooks.give_up(txn_state.topic_id, 2)
        hooks.lost(txn_state.topic_id, 0)
        await asyncio.sleep(0)  # the lost log closes in the background
        return plog

    lost_log = asyncio.run(scenario())
    assert (TRANSACTION_STATE_TOPIC, 2, 11) in opened  # opened as a topic partition, not an offsets one
    assert txn.calls == [("txn.take", 2, 11, (TRANSACTION_STATE_TOPIC, 2, 11)),
                         ("txn.take", 0, 4, (TRANSACTION_STATE_TOPIC, 0, 4)),
                         ("txn.give_up", 2), ("txn.lost", 0)]
    assert lost_log.closed
    assert recorder.calls == [("data.take", "orders", 1, ("orders", 1, 3), 0),
                              ("offsets.take", 0, (OFFSETS_TOPIC, 0, 2))]
    # markers may be queued for data and offsets partitions, never for __transaction_state
    assert taken == [(orders.topic_id, 1), (offsets_id, 0)]


def test_a_failed_transaction_state_take_unloads_closes_and_raises(parts):
    hooks, catalog, _recorder, _orders, _opened = parts
    txn_state = txn_topic()
    catalog.later.append(txn_state)
    with pytest.raises(LookupError, match="no transaction coordinator"):  # not attached yet: retried later
        asyncio.run(hooks.take(txn_state.topic_id, 1, 1))
    hooks.txn = TxnRecorder(fail_take=True)
    taken = []
    hooks.taken = taken.append
    with pytest.raises(RuntimeError, match="replay failed"):
        asyncio.run(hooks.take(txn_state.topic_id, 1, 2))
    assert hooks.txn.calls == [("txn.take", 1, 2, (TRANSACTION_STATE_TOPIC, 1, 2)), ("txn.lost", 1)]
    assert hooks.owned == {} and taken == []


def test_a_user_topic_is_data_whatever_its_name():
    assert runtime_of(TopicInfo(TRANSACTION_STATE_TOPIC, uuid.uuid4(), 1)) is Runtime.DATA
    assert runtime_of(TopicInfo(TRANSACTION_STATE_TOPIC, uuid.uuid4(), 1, internal=True)) is Runtime.TXN
    assert runtime_of(TopicInfo(OFFSETS_TOPIC, uuid.uuid4(), 1, internal=True)) is Runtime.OFFSETS
    assert runtime_of(TopicInfo(SHARE_GROUP_STATE_TOPIC, uuid.uuid4(), 1)) is Runtime.DATA
    assert runtime_of(TopicInfo(SHARE_GROUP_STATE_TOPIC, uuid.uuid4(), 1, internal=True)) is Runtime.SHARE


class ShareRecorder:
    """Stands in for the ShareCoordinator: records take/give_up/lost."""

    def __init__(self, fail_take: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail_take = fail_take

    async def take(self, partition, log):
        self.calls.append(("share.take", partition, log.key))
        if self.fail_take:
            raise RuntimeError("replay failed")

    async def give_up(self, partition):
        self.calls.append(("share.give_up", partition))

    def lost(self, partition):
        self.calls.append(("share.lost", partition))


def test_share_state_partitions_go_to_the_share_coordinator_and_share_partitions_follow_their_topic(parts):
    hooks, catalog, recorder, orders, opened = parts
    state = TopicInfo(SHARE_GROUP_STATE_TOPIC, uuid.uuid4(), 3, internal=True)
    catalog.later.append(state)
    with pytest.raises(LookupError, match="no share coordinator"):  # not attached yet: retried later
        asyncio.run(hooks.take(state.topic_id, 1, 1))
    share = hooks.share = ShareRecorder()
    gone: list[tuple] = []
    hooks.topic_gone = lambda topic, index: gone.append((topic, index))
    taken = []
    hooks.taken = taken.append

    async def scenario():
        await hooks.take(state.topic_id, 1, 5)
        await hooks.take(state.topic_id, 2, 6)
        await hooks.take(orders.topic_id, 0, 3)
        await hooks.take(orders.topic_id, 1, 4)
        plog = hooks.owned[(state.topic_id, 2)].log
        await hooks.give_up(state.topic_id, 1)
        hooks.lost(state.topic_id, 2)
        await hooks.give_up(orders.topic_id, 0)
        hooks.lost(orders.topic_id, 1)
        await asyncio.sleep(0)  # the lost log closes in the background
        return plog

    lost_log = asyncio.run(scenario())
    assert (SHARE_GROUP_STATE_TOPIC, 1, 5) in opened
    assert share.calls == [("share.take", 1, (SHARE_GROUP_STATE_TOPIC, 1, 5)),
                           ("share.take", 2, (SHARE_GROUP_STATE_TOPIC, 2, 6)), ("share.give_up", 1),
                           ("share.lost", 2)]
    assert lost_log.closed
    assert gone == [("orders", 0), ("orders", 1)]  # the share partitions over them go too
    assert taken == [(orders.topic_id, 0), (orders.topic_id, 1)]  # no markers for __share_group_state
    hooks.share = ShareRecorder(fail_take=True)
    with pytest.raises(RuntimeError, match="replay failed"):
        asyncio.run(hooks.take(state.topic_id, 0, 7))
    assert hooks.owned == {}
