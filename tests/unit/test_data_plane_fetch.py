"""Fetch (long poll woken by appends, max_wait timeout, limits, errors, topic ids,
sessions) and ListOffsets."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.net.dispatch import Deferred
from protocol.apis import ApiKey
from storage.batch import iter_batches
from tests.support.data_plane import Plane, batch, ms, req


def offsets_of(records: bytes) -> list[int]:
    return [b.base_offset for b in iter_batches(records or b"")]


async def test_long_poll_is_woken_by_an_append(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        request = plane.fetch_request("t", 0, 0, max_wait=10_000, min_bytes=1)
        pending = plane.send(request)
        assert isinstance(pending, Deferred)
        await asyncio.sleep(0.05)
        assert not pending.future.done() and plane.data.purgatory.waiting() == 1
        started = time.monotonic()
        await plane.produce("t", 0, batch(b"wake", b"up"), acks=1)
        response = await plane.resolve(request, pending, timeout=2)
        assert time.monotonic() - started < 1.0  # woken by the append, not by the 10 s timer
        part = response.responses[0].partitions[0]
        assert (part.error_code, part.high_watermark, offsets_of(part.records)) == (ErrorCode.none, 2, [0])
        assert plane.data.purgatory.waiting() == 0


async def test_long_poll_waits_for_min_bytes(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        one = batch(b"x" * 10)
        request = plane.fetch_request("t", 0, 0, max_wait=10_000, min_bytes=len(one) * 2)
        pending = plane.send(request)
        await plane.produce("t", 0, one)
        await asyncio.sleep(0.05)
        assert not pending.future.done()  # one batch is not min_bytes yet
        await plane.produce("t", 0, one)
        response = await plane.resolve(request, pending, timeout=2)
        assert offsets_of(response.responses[0].partitions[0].records) == [0, 1]


async def test_long_poll_times_out_at_max_wait_with_empty_records(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, batch(b"old"))
        request = plane.fetch_request("t", 0, 1, max_wait=200, min_bytes=1)
        started = time.monotonic()
        response = await plane.resolve(request, plane.send(request), timeout=5)
        elapsed = time.monotonic() - started
        assert 0.18 <= elapsed < 1.5
        part = response.responses[0].partitions[0]
        assert (part.error_code, part.high_watermark, part.records) == (ErrorCode.none, 1, b"")
        assert plane.data.purgatory.waiting() == 0


async def test_fetch_returns_at_once_when_data_or_no_wait(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, batch(b"a"))
        assert isinstance(plane.send(plane.fetch_request("t", 0, 0, max_wait=10_000)), bytes)
        assert isinstance(plane.send(plane.fetch_request("t", 0, 1, max_wait=0)), bytes)


async def test_fetch_errors(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, batch(b"a", b"b"))
        beyond = await plane.fetch("t", 0, 3)
        assert (beyond.error_code, beyond.high_watermark, beyond.records) == (ErrorCode.offset_out_of_range, -1, b"")
        assert (await plane.fetch("t", 0, -1)).error_code == ErrorCode.offset_out_of_range
        assert (await plane.fetch("t", 0, 2)).records == b""  # at the end: empty, not an error
        assert (await plane.fetch("t", 5, 0)).error_code == ErrorCode.unknown_topic_or_partition
        # an error answers at once even with a long max_wait
        assert (await plane.fetch("nope", 0, 0, max_wait=30_000)).error_code == ErrorCode.unknown_topic_or_partition
        fenced = req(ApiKey.FETCH, 12, max_wait=ms(0), min_bytes=1, max_bytes=1000, isolation_level=0,
                     session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                         {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100,
                                                        "current_leader_epoch": 3}]}])
        response = await plane.call(fenced)
        assert response.responses[0].partitions[0].error_code == ErrorCode.unknown_leader_epoch


async def test_fetch_v13_by_topic_id_and_sessions(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        topic_id = (await plane.create("t")).topic_id
        await plane.produce("t", 0, batch(b"a"))

        def by_id(tid, session_id=0, epoch=-1):
            return req(ApiKey.FETCH, 16, max_wait=ms(0), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                       session_id=session_id, session_epoch=epoch, forgotten_topics_data=[], rack_id="", topics=[
                           {"topic_id": tid, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                             "partition_max_bytes": 1 << 20}]}])

        ok = await plane.call(by_id(topic_id))
        assert ok.error_code == ErrorCode.none and ok.session_id == 0
        assert ok.responses[0].topic_id == topic_id and offsets_of(ok.responses[0].partitions[0].records) == [0]
        unknown = await plane.call(by_id(uuid.uuid4()))
        assert unknown.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_id
        new_session = await plane.call(by_id(topic_id, 0, 0))  # asks for a session: full answer, session 0
        assert new_session.error_code == ErrorCode.none and new_session.session_id == 0
        incremental = await plane.call(by_id(topic_id, 1234, 3))
        assert incremental.error_code == ErrorCode.fetch_session_id_not_found and incremental.responses == ()


async def test_fetch_byte_limits(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 2)
        size = len(batch(b"x" * 100))
        for _ in range(3):
            await plane.produce("t", 0, batch(b"x" * 100))
            await plane.produce("t", 1, batch(b"x" * 100))

        def two(max_bytes, partition_max):
            return req(ApiKey.FETCH, 11, max_wait=ms(0), min_bytes=1, max_bytes=max_bytes, isolation_level=0,
                       session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                           {"topic": "t", "partitions": [
                               {"partition": p, "fetch_offset": 0, "partition_max_bytes": partition_max}
                               for p in (0, 1)]}])

        def got(response):
            return [offsets_of(p.records) for p in response.responses[0].partitions]

        assert got(await plane.call(two(1 << 20, 1 << 20))) == [[0, 1, 2], [0, 1, 2]]
        assert got(await plane.call(two(1 << 20, size * 2))) == [[0, 1], [0, 1]]
        assert got(await plane.call(two(size * 4, 1 << 20))) == [[0, 1, 2], [0]]
        # one byte: the first partition still gets one whole batch (KIP-74), the second nothing
        assert got(await plane.call(two(1, 1))) == [[0], []]


async def test_read_committed_and_v4(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, batch(b"a"))
        request = req(ApiKey.FETCH, 4, max_wait=ms(0), min_bytes=1, max_bytes=1 << 20, isolation_level=1, topics=[
            {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}])
        part = (await plane.call(request)).responses[0].partitions[0]
        assert (part.high_watermark, part.last_stable_offset, part.aborted_transactions) == (1, 1, ())
        assert offsets_of(part.records) == [0]


def list_offsets(version, *entries, topic="t"):
    return req(ApiKey.LIST_OFFSETS, version, replica_id=-1, isolation_level=0, topics=[
        {"name": topic, "partitions": [{"partition_index": p, "timestamp": ts, "current_leader_epoch": e}
                                       for p, ts, e in entries]}])


async def test_list_offsets(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 2)
        await plane.produce("t", 0, batch(b"a", b"b", ts=100))   # offsets 0-1, ts 100, 101
        await plane.produce("t", 0, batch(b"c", b"d", ts=500))   # offsets 2-3, ts 500, 501
        await plane.produce("t", 0, batch(b"e", ts=300))         # offset 4, ts 300

        async def one(version, ts, partition=0, epoch=-1):
            response = await plane.call(list_offsets(version, (partition, ts, epoch)))
            return response.topics[0].partitions[0]

        earliest, latest = await one(9, -2), await one(9, -1)
        assert (earliest.offset, earliest.timestamp, earliest.leader_epoch) == (0, -1, 0)
        assert (latest.offset, latest.timestamp) == (5, -1)
        assert ((await one(9, 101)).offset, (await one(9, 101)).timestamp) == (1, 101)
        assert ((await one(9, 102)).offset, (await one(9, 102)).timestamp) == (2, 500)
        assert ((await one(9, 300)).offset, (await one(9, 300)).timestamp) == (2, 500)
        missing = await one(9, 10_000)
        assert (missing.error_code, missing.offset, missing.timestamp, missing.leader_epoch) == \
            (ErrorCode.none, -1, -1, -1)
        top = await one(7, -3)
        assert (top.offset, top.timestamp) == (3, 501)
        assert (await one(9, -5)).offset == -1  # latest tiered: no remote storage
        assert (await one(9, -1, partition=1)).offset == 0
        assert (await one(9, -3, partition=1)).offset == -1
        assert (await one(9, -1, partition=7)).error_code == ErrorCode.unknown_topic_or_partition
        assert (await one(9, -1, epoch=2)).error_code == ErrorCode.unknown_leader_epoch
        assert (await one(9, -1, epoch=-7)).error_code == ErrorCode.fenced_leader_epoch
        v1 = await one(1, -1)
        assert (v1.error_code, v1.offset) == (ErrorCode.none, 5) and not hasattr(v1, "leader_epoch")
        dup = await plane.call(list_offsets(9, (0, -1, -1), (0, -2, -1), (1, -1, -1)))
        assert [p.error_code for p in dup.topics[0].partitions] == \
            [ErrorCode.invalid_request, ErrorCode.invalid_request, ErrorCode.none]
        unknown = await plane.call(list_offsets(9, (0, -1, -1), topic="nope"))
        assert unknown.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("policy", ["fsync", "none"])
async def test_acks_all_waits_for_the_flush_policy(tmp_path, policy):
    async with Plane(str(tmp_path), **{"log.flush.policy": policy}) as plane:
        await plane.create("t")
        answer = await plane.produce("t", 0, batch(b"a"), acks=-1)
        assert answer.error_code == ErrorCode.none
        assert plane.data.partition("t", 0).log.high_watermark == 1


async def test_a_fetch_decoded_by_the_sliced_path_still_parks_and_is_answered(tmp_path, monkeypatch):
    """A Fetch over dispatch.SLICED_FROM (a consumer of very many partitions) is decoded in slices; its handler's
    parked answer (an Abandonable) is awaited there, then encoded as any other."""
    from coordinator.net import dispatch

    monkeypatch.setattr(dispatch, "SLICED_FROM", 0)
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        request = plane.fetch_request("t", 0, 0, max_wait=10_000, min_bytes=1)
        out = plane.send(request)
        assert isinstance(out, Deferred)
        await asyncio.sleep(0.05)
        assert not out.future.done()  # parked: nothing to read yet
        await plane.produce("t", 0, batch(b"woken"))
        answer = await plane.resolve(request, out, timeout=5)
        (partition,) = answer.responses[0].partitions
        assert partition.error_code == ErrorCode.none and partition.high_watermark == 1
