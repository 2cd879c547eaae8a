"""Queued transaction markers (cluster mode) over an in-memory queue: the holder writes them in order and
deletes what is durable, drops what Kafka drops, keeps the rest for a retry; the coordinator's wait ends on
the done notification or on the poll. The same over a real PostgreSQL: test_pg_txn_markers.py."""

from __future__ import annotations

import asyncio
import types
import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.cluster import marker_consumer, marker_queue
from coordinator.cluster.marker_consumer import MarkerConsumer
from coordinator.cluster.marker_queue import MarkerQueue
from coordinator.errors import KafkaError, UnknownTopicOrPartition
from storage.pg import txn_markers
from storage.pg.errors import StoreUnavailableError
from storage.pg.txn_markers import QueuedMarker

ORDERS = uuid.uuid4()
OTHER = uuid.uuid4()


class FakeQueue:
    """kc_txn_markers in memory, with txn_markers' functions (the pool argument is ignored)."""

    def __init__(self) -> None:
        self.rows: list[QueuedMarker] = []
        self.next_id = 1
        self.partitions = {(ORDERS, 0), (ORDERS, 1), (OTHER, 0)}
        self.notified: list[str] = []
        self.down = False

    def put(self, topic_id, partition, pid, epoch=0, commit=True, coordinator_epoch=1) -> int:
        row = QueuedMarker(self.next_id, topic_id, partition, pid, epoch, commit, coordinator_epoch)
        self.next_id += 1
        self.rows.append(row)
        return row.id

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailableError("PostgreSQL unavailable")

    async def enqueue(self, _pool, topic_id, partition, pid, epoch, commit, coordinator_epoch):
        self._check()
        if (topic_id, partition) not in self.partitions:
            return None
        self.notified.append(f"q:{topic_id}:{partition}")
        return self.put(topic_id, partition, pid, epoch, commit, coordinator_epoch)

    async def queued(self, _pool, topic_id, partition, limit=100):
        self._check()
        return [r for r in self.rows if (r.topic_id, r.partition) == (topic_id, partition)][:limit]

    async def delete(self, _pool, ids):
        self._check()
        gone = [r.id for r in self.rows if r.id in ids]
        self.rows = [r for r in self.rows if r.id not in ids]
        if gone:
            self.notified.append("d:" + ",".join(map(str, gone)))

    async def still_queued(self, _pool, ids):
        self._check()
        return {r.id for r in self.rows if r.id in ids}

    async def queued_partitions(self, _pool):
        self._check()
        return sorted({(r.topic_id, r.partition) for r in self.rows}, key=str)

    async def delete_orphans(self, _pool):
        self._check()
        orphans = [r.id for r in self.rows if (r.topic_id, r.partition) not in self.partitions]
        await self.delete(_pool, orphans)
        return len(orphans)


@pytest.fixture
def queue(monkeypatch):
    fake = FakeQueue()
    sql = types.SimpleNamespace(**{name: getattr(fake, name) for name in (
        "enqueue", "queued", "delete", "still_queued", "queued_partitions", "delete_orphans")},
        parse=txn_markers.parse, QUEUED=txn_markers.QUEUED, QueuedMarker=QueuedMarker)
    monkeypatch.setattr(marker_consumer, "txn_markers", sql)
    monkeypatch.setattr(marker_queue, "txn_markers", sql)
    return fake


class Writer:
    """This node's local marker writer: records each marker; `errors` maps a producer id to what it raises."""

    def __init__(self) -> None:
        self.written: list[tuple] = []
        self.errors: dict[int, BaseException] = {}
        self.block: asyncio.Event | None = None

    async def __call__(self, topic, partition, pid, epoch, commit, coordinator_epoch):
        if self.block is not None:
            await self.block.wait()
        error = self.errors.get(pid)
        if error is not None:
            raise error
        self.written.append((topic, partition, pid, epoch, commit, coordinator_epoch))


def holding_of(held: dict):
    return lambda topic_id, partition: held.get((topic_id, partition))


class FakeSleep:
    """Back-off sleeps recorded, each returning at once (after letting the loop run)."""

    def __init__(self) -> None:
        self.slept: list[float] = []
        self.before: list = []  # callbacks run at each sleep, in order (e.g. "the partition recovers")

    async def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.before:
            self.before.pop(0)()
        await asyncio.sleep(0)


async def settle(consumer: MarkerConsumer) -> None:
    while consumer._draining:
        await asyncio.gather(*consumer._draining.values(), return_exceptions=True)


def test_the_holder_writes_a_partitions_markers_in_order_and_deletes_them(queue):
    writer = Writer()
    consumer = MarkerConsumer(None, holding_of({(ORDERS, 0): "orders"}), writer)
    for pid in (7, 8, 9):
        queue.put(ORDERS, 0, pid, epoch=2, commit=pid != 8, coordinator_epoch=5)
    queue.put(ORDERS, 1, 10)  # another node's partition

    async def scenario():
        consumer.queued(ORDERS, 0)
        consumer.queued(ORDERS, 1)  # not held here: ignored
        await settle(consumer)

    asyncio.run(scenario())
    assert writer.written == [("orders", 0, 7, 2, True, 5), ("orders", 0, 8, 2, False, 5),
                              ("orders", 0, 9, 2, True, 5)]
    assert [(r.topic_id, r.partition, r.producer_id) for r in queue.rows] == [(ORDERS, 1, 10)]
    assert queue.notified == ["d:1,2,3"]
    assert consumer.written == 3


def test_markers_kafka_drops_are_deleted_and_a_retriable_failure_keeps_the_rest_queued_in_order(queue):
    writer = Writer()
    writer.errors = {1: UnknownTopicOrPartition("gone"), 2: KafkaError("old", ErrorCode.transaction_coordinator_fenced),
                     4: KafkaError("moving", ErrorCode.not_leader_or_follower)}
    held = {(ORDERS, 0): "orders"}
    sleep = FakeSleep()
    consumer = MarkerConsumer(None, holding_of(held), writer, sleep=sleep, max_retry_s=0.2)
    for pid in (1, 2, 3, 4, 5):
        queue.put(ORDERS, 0, pid)
    # the first back-off: still failing; the second: the partition accepts it; the third never comes
    sleep.before = [lambda: None, lambda: writer.errors.pop(4)]

    async def scenario():
        consumer.taken((ORDERS, 0))
        await settle(consumer)

    asyncio.run(scenario())
    assert [w[2] for w in writer.written] == [3, 4, 5]  # 4 written only once the partition took it; 5 after it
    assert sleep.slept == [0.05, 0.1]  # back-off while the partition is held here
    assert queue.rows == []
    assert queue.notified == ["d:1,2,3", "d:4,5"]


def test_a_partition_no_longer_held_stops_its_drain_and_its_markers_wait_for_the_next_holder(queue):
    writer = Writer()
    writer.errors = {1: KafkaError("moving", ErrorCode.not_leader_or_follower)}
    held = {(ORDERS, 0): "orders"}
    sleep = FakeSleep()
    sleep.before = [lambda: held.clear()]  # given up while backing off
    consumer = MarkerConsumer(None, holding_of(held), writer, sleep=sleep)
    queue.put(ORDERS, 0, 1)
    queue.put(ORDERS, 0, 2)

    async def scenario():
        consumer.taken((ORDERS, 0))
        await settle(consumer)

    asyncio.run(scenario())
    assert writer.written == [] and [r.producer_id for r in queue.rows] == [1, 2]
    assert sleep.slept == [0.05]


def test_a_notification_during_a_drain_makes_it_read_the_queue_again(queue):
    writer = Writer()
    writer.block = asyncio.Event()
    consumer = MarkerConsumer(None, holding_of({(ORDERS, 0): "orders"}), writer)
    queue.put(ORDERS, 0, 1)

    async def scenario():
        consumer.queued(ORDERS, 0)
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # the drain waits in the writer with marker 1
        queue.put(ORDERS, 0, 2)
        consumer.queued(ORDERS, 0)  # one drain per partition: this one only marks it for another read
        assert len(consumer._draining) == 1
        writer.block.set()
        await settle(consumer)

    asyncio.run(scenario())
    assert [w[2] for w in writer.written] == [1, 2] and queue.rows == []


def test_the_sweep_drains_held_partitions_drops_orphans_and_waits_for_a_writer(queue):
    held = {(ORDERS, 0): "orders", (OTHER, 0): "other"}
    consumer = MarkerConsumer(None, holding_of(held))
    queue.put(ORDERS, 0, 1)
    queue.put(ORDERS, 1, 2)  # held elsewhere
    queue.put(uuid.uuid4(), 0, 3)  # its topic is gone

    async def scenario():
        assert await consumer.sweep() == 1  # no writer yet: nothing written
        await settle(consumer)
        assert [r.producer_id for r in queue.rows] == [1, 2]
        consumer.writer = writer = Writer()
        assert await consumer.sweep() == 1
        await settle(consumer)
        return writer

    writer = asyncio.run(scenario())
    assert writer.written == [("orders", 0, 1, 0, True, 1)]
    assert [r.producer_id for r in queue.rows] == [2]


def test_a_drain_that_meets_postgresql_down_ends_and_the_sweep_retries(queue):
    writer = Writer()
    consumer = MarkerConsumer(None, holding_of({(ORDERS, 0): "orders"}), writer)
    queue.put(ORDERS, 0, 1)

    async def scenario():
        queue.down = True
        consumer.taken((ORDERS, 0))
        await settle(consumer)
        with pytest.raises(StoreUnavailableError):
            await consumer.sweep()
        queue.down = False
        await consumer.sweep()
        await settle(consumer)

    asyncio.run(scenario())
    assert [w[2] for w in writer.written] == [1] and queue.rows == []


# ------------------------------------------------------------------- the coordinator side


def test_remote_queues_the_marker_and_returns_once_the_holder_deleted_it(queue):
    queued = []
    relay = MarkerQueue(None, {"orders": ORDERS}.get, poll_s=3600, queued=lambda *key: queued.append(key))

    async def scenario():
        wait = asyncio.ensure_future(relay.remote("orders", 1, 42, 3, True, 9))
        await asyncio.sleep(0)
        assert not wait.done() and relay.waiting() == 1
        [row] = queue.rows
        assert (row.topic_id, row.partition, row.producer_id, row.producer_epoch, row.commit,
                row.coordinator_epoch) == (ORDERS, 1, 42, 3, True, 9)
        relay.notified(queue.notified[-1])  # our own 'q:' notification reaches the consumer callback
        assert queued == [(ORDERS, 1)]
        relay.notified("d:999")  # another node's marker
        await asyncio.sleep(0)
        assert not wait.done()
        relay.notified(f"d:5,{row.id}")
        await wait
        assert relay.waiting() == 0
        await relay.stop()

    asyncio.run(scenario())


def test_a_done_notification_before_the_wait_and_a_missed_one_both_end_it(queue):
    async def scenario():
        relay = MarkerQueue(None, {"orders": ORDERS}.get, poll_s=3600)
        relay.notified(f"d:{queue.next_id}")  # the holder was quicker than our enqueue's answer
        early = asyncio.ensure_future(relay.remote("orders", 0, 1, 0, True, 1))
        for _ in range(3):
            await asyncio.sleep(0)
        assert early.done() and relay.waiting() == 0  # no wait for a poll
        await early
        queue.rows.clear()
        relay = MarkerQueue(None, {"orders": ORDERS}.get, poll_s=0)
        wait = asyncio.ensure_future(relay.remote("orders", 0, 2, 0, True, 1))
        await asyncio.sleep(0)
        assert not wait.done()
        queue.rows.clear()  # deleted without a notification (a topic deletion): the poll sees it
        await asyncio.wait_for(wait, 60)  # a failure, not a hang, if the poll never looks
        await relay.stop()

    asyncio.run(scenario())


def test_remote_errors_unknown_partitions_and_postgresql_down(queue):
    relay = MarkerQueue(None, {"orders": ORDERS}.get)

    async def scenario():
        with pytest.raises(UnknownTopicOrPartition):
            await relay.remote("deleted", 0, 1, 0, True, 1)
        with pytest.raises(UnknownTopicOrPartition):
            await relay.remote("orders", 7, 1, 0, True, 1)
        queue.down = True
        with pytest.raises(KafkaError) as down:
            await relay.remote("orders", 0, 1, 0, True, 1)
        assert down.value.code is ErrorCode.request_timed_out

    asyncio.run(scenario())
    assert queue.rows == []


def test_notifications_parse():
    assert txn_markers.parse(f"q:{ORDERS}:3") == txn_markers.Notification("q", ORDERS, 3)
    assert txn_markers.parse("d:1,22,333") == txn_markers.Notification("d", ids=(1, 22, 333))
    assert txn_markers.parse("q:not-a-uuid:1") is None
    assert txn_markers.parse("x:1") is None
    relay = MarkerQueue(None, {}.get)
    relay.notified("garbage")  # logged, nothing else
