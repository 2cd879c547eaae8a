"""Transactions in the data plane, through the handlers: transactional Produce (with and without the
KIP-890 verifier), DataPlane.write_marker, Fetch read_committed (LSO, aborted transactions, delayed
fetches waiting on the LSO), ListOffsets isolation, DescribeProducers, and a restart."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from coordinator.errors import KafkaError
from coordinator.net.dispatch import Deferred
from protocol.apis import ApiKey
from storage.batch import build_batch, iter_batches
from storage.control_records import read_marker
from tests.support.data_plane import Plane, batch, ms, req
from tests.support.retention import SMALL


def txn(pid: int, seq: int, *values: bytes, epoch: int = 0) -> bytes:
    return batch(*values, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def fetch_request(offset: int, isolation: int, *, max_wait: int = 0, min_bytes: int = 1, partition: int = 0):
    return req(ApiKey.FETCH, 12, max_wait=ms(max_wait), min_bytes=min_bytes, max_bytes=1 << 20,
               isolation_level=isolation, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
               topics=[{"topic": "t", "partitions": [{"partition": partition, "fetch_offset": offset,
                                                      "partition_max_bytes": 1 << 20}]}])


async def fetch(plane: Plane, offset: int, isolation: int, partition: int = 0):
    response = await plane.call(fetch_request(offset, isolation, partition=partition))
    return response.responses[0].partitions[0]


async def latest(plane: Plane, isolation: int, timestamp: int = -1) -> int:
    response = await plane.call(req(ApiKey.LIST_OFFSETS, 9, replica_id=-1, isolation_level=isolation, topics=[
        {"name": "t", "partitions": [{"partition_index": 0, "timestamp": timestamp, "current_leader_epoch": -1}]}]))
    return response.topics[0].partitions[0].offset


def offsets(records: bytes | None) -> list[int]:
    return [b.base_offset for b in iter_batches(records or b"")]


async def describe(plane: Plane):
    response = await plane.call(req(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[{"name": "t", "partition_indexes": [0]}]))
    return {p.producer_id: p for p in response.topics[0].partitions[0].active_producers}


async def test_read_committed_stops_at_the_lso_until_the_commit_marker(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, batch(b"plain"))                                    # 0
        assert (await plane.produce("t", 0, txn(5, 0, b"a", b"b"), transactional_id="tx")).base_offset == 1
        assert (await plane.produce("t", 0, txn(5, 2, b"c"), transactional_id="tx")).base_offset == 3
        committed, uncommitted = await fetch(plane, 0, 1), await fetch(plane, 0, 0)
        assert (committed.high_watermark, committed.last_stable_offset, offsets(committed.records)) == (4, 1, [0])
        assert committed.aborted_transactions == ()
        assert (uncommitted.last_stable_offset, offsets(uncommitted.records)) == (1, [0, 1, 3])
        assert uncommitted.aborted_transactions is None
        assert (await fetch(plane, 1, 1)).records in (b"", None)  # at the LSO: nothing, no error
        assert (await latest(plane, 1), await latest(plane, 0)) == (1, 4)
        # the first record at or after ts 1001 is offset 2 (ts 1001): not below the LSO
        assert (await latest(plane, 1, timestamp=1001), await latest(plane, 0, timestamp=1001)) == (-1, 2)
        assert (await describe(plane))[5].current_txn_start_offset == 1

        await plane.data.write_marker("t", 0, 5, 0, True, 0)                            # 4
        committed = await fetch(plane, 0, 1)
        assert (committed.last_stable_offset, offsets(committed.records)) == (5, [0, 1, 3, 4])
        assert committed.aborted_transactions == ()
        marker = list(iter_batches(committed.records))[-1]
        assert marker.is_control and read_marker(marker).commit
        assert await latest(plane, 1) == 5
        producer = (await describe(plane))[5]
        assert (producer.current_txn_start_offset, producer.coordinator_epoch, producer.last_sequence) == (-1, 0, 2)


async def test_an_aborted_transaction_is_listed_for_the_records_it_overlaps(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, txn(5, 0, b"a", b"b"), transactional_id="tx")     # 0-1
        await plane.produce("t", 0, txn(6, 0, b"c"), transactional_id="other")         # 2
        await plane.data.write_marker("t", 0, 5, 0, False, 0)                          # 3: abort 5
        part = await fetch(plane, 0, 1)
        assert (part.last_stable_offset, offsets(part.records)) == (2, [0])  # producer 6 still open at 2
        assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(5, 0)]
        await plane.data.write_marker("t", 0, 6, 0, True, 0)                           # 4: commit 6
        part = await fetch(plane, 0, 1)
        assert (part.last_stable_offset, offsets(part.records)) == (5, [0, 2, 3, 4])
        assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(5, 0)]
        assert (await fetch(plane, 4, 1)).aborted_transactions == ()  # past the aborted one's marker
        assert plane.data.partition("t", 0).last_stable_offset == 5


async def test_a_non_transactional_batch_mid_transaction_and_stale_markers_are_refused(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, txn(5, 0, b"a", epoch=2), transactional_id="tx")
        plain = batch(b"b", producer_id=5, producer_epoch=2, base_sequence=1)
        assert (await plane.produce("t", 0, plain)).error_code == ErrorCode.invalid_txn_state
        with pytest.raises(KafkaError) as stale:
            await plane.data.write_marker("t", 0, 5, 1, False, 0)
        assert stale.value.code == ErrorCode.invalid_producer_epoch
        await plane.data.write_marker("t", 0, 5, 3, False, 4)  # abort with a bumped epoch
        with pytest.raises(KafkaError) as fenced:
            await plane.data.write_marker("t", 0, 5, 3, True, 3)
        assert fenced.value.code == ErrorCode.transaction_coordinator_fenced
        old = await plane.produce("t", 0, txn(5, 1, b"c", epoch=2), transactional_id="tx")
        assert old.error_code == ErrorCode.invalid_producer_epoch
        with pytest.raises(KafkaError) as unknown:
            await plane.data.write_marker("nope", 0, 5, 3, True, 4)
        assert unknown.value.code == ErrorCode.unknown_topic_or_partition
        assert plane.data.partition("t", 0).log.log_end_offset == 2


async def test_the_verifier_is_asked_when_a_batch_would_begin_a_transaction(tmp_path):
    asked: list[tuple] = []

    def verifier(txn_id, pid, epoch, topic, partition):
        asked.append((txn_id, pid, epoch, topic, partition))
        return ErrorCode.invalid_txn_state if partition == 1 else None

    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 2)
        plane.data.txn_verifier = verifier
        refused = await plane.produce("t", 1, txn(5, 0, b"a"), transactional_id="tx")
        assert refused.error_code == ErrorCode.invalid_txn_state
        assert plane.data.partition("t", 1).log.log_end_offset == 0
        await plane.produce("t", 0, txn(5, 0, b"a"), transactional_id="tx")
        await plane.produce("t", 0, txn(5, 1, b"b"), transactional_id="tx")  # ongoing: not asked again
        assert asked == [("tx", 5, 0, "t", 1), ("tx", 5, 0, "t", 0)]
        await plane.data.write_marker("t", 0, 5, 0, True, 0)
        await plane.produce("t", 0, txn(5, 2, b"c"), transactional_id="tx")  # a new transaction: asked
        assert len(asked) == 3
        await plane.produce("t", 0, batch(b"x", producer_id=9, producer_epoch=0, base_sequence=0))
        assert len(asked) == 3  # idempotent batches are not verified


async def test_a_read_committed_delayed_fetch_waits_for_the_marker(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        committed_req = fetch_request(0, 1, max_wait=60_000)
        uncommitted_req = fetch_request(0, 0, max_wait=60_000)
        committed, uncommitted = plane.send(committed_req), plane.send(uncommitted_req)
        assert isinstance(committed, Deferred) and isinstance(uncommitted, Deferred)
        await plane.produce("t", 0, txn(5, 0, b"a"), transactional_id="tx")  # acks=-1: durable
        answer = await plane.resolve(uncommitted_req, uncommitted)
        assert offsets(answer.responses[0].partitions[0].records) == [0]
        for _ in range(5):
            await asyncio.sleep(0)
        assert not committed.future.done()  # the records are not below the LSO yet
        await plane.data.write_marker("t", 0, 5, 0, True, 0)
        answer = await plane.resolve(committed_req, committed)
        part = answer.responses[0].partitions[0]
        assert (part.last_stable_offset, offsets(part.records)) == (2, [0, 1])


async def test_a_restart_rebuilds_ongoing_and_aborted_transactions(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, txn(5, 0, b"a"), transactional_id="tx")            # 0
        await plane.data.write_marker("t", 0, 5, 0, False, 2)                          # 1
        await plane.produce("t", 0, batch(b"b"))                                       # 2
        await plane.produce("t", 0, txn(6, 0, b"c", b"d"), transactional_id="tx2")     # 3-4, left open
    async with Plane(str(tmp_path)) as plane:
        part = plane.data.partition("t", 0)
        assert (part.log.high_watermark, part.last_stable_offset) == (5, 3)
        answer = await fetch(plane, 0, 1)
        assert offsets(answer.records) == [0, 1, 2]
        assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == [(5, 0)]
        producers = await describe(plane)
        assert (producers[6].current_txn_start_offset, producers[5].coordinator_epoch) == (3, 2)
        assert await latest(plane, 1) == 3
        await plane.data.write_marker("t", 0, 6, 0, True, 2)
        assert part.last_stable_offset == 6


async def test_compaction_keeps_markers_so_a_rebuild_closes_every_transaction(tmp_path):
    def keyed(key: bytes, pid: int = -1, transactional: bool = False) -> bytes:
        return build_batch([(key, b"v", 1000)], producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                           base_sequence=0 if pid >= 0 else -1, is_transactional=transactional)

    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 1, {"segment.bytes": SMALL, "cleanup.policy": "compact"})
        await plane.produce("t", 0, keyed(b"a", 5, True), transactional_id="tx")   # 0
        await plane.data.write_marker("t", 0, 5, 0, True, 0)                     # 1
        await plane.produce("t", 0, keyed(b"b", 6, True), transactional_id="tx2")  # 2
        await plane.data.write_marker("t", 0, 6, 0, True, 0)                     # 3: the same control key
        for key in (b"c", b"c", b"c", b"c"):
            await plane.produce("t", 0, keyed(key))                               # 4-7
        part = plane.data.partition("t", 0)
        assert part.log.segments[-1].base_offset > 4
        await plane.data.retention.check_all()
        seen, offset = [], 0
        while offset < 8:  # a read stops at a segment's end
            got = list(iter_batches((await fetch(plane, offset, 0)).records or b""))
            seen += [(b.base_offset, b.is_control) for b in got]
            offset = got[-1].next_offset
        assert seen[:4] == [(0, False), (1, True), (2, False), (3, True)]  # both markers kept
    async with Plane(str(tmp_path)) as plane:
        part = plane.data.partition("t", 0)
        assert part.last_stable_offset == part.log.high_watermark == 8
