"""Topic partitions hosted only while owned (cluster mode): a partition given up or lost answers
NOT_LEADER_OR_FOLLOWER on Produce, Fetch, ListOffsets and DeleteRecords, its parked fetches are
answered, and a re-take at a new epoch serves again with that leader epoch."""

from __future__ import annotations

import asyncio

from kio.schema.errors import ErrorCode

from coordinator.cluster.log_factory import LocalLogFactory
from coordinator.net.dispatch import Deferred
from protocol.apis import ApiKey
from storage.batch import iter_batches
from tests.support.data_plane import Plane, batch, ms, req

E = ErrorCode


def fetch_at(topic: str, partition: int, offset: int, epoch: int = -1, max_wait: int = 0):
    return req(ApiKey.FETCH, 12, max_wait=ms(max_wait), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
               session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
               topics=[{"topic": topic, "partitions": [
                   {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
                    "current_leader_epoch": epoch}]}])


async def codes_for(plane: Plane, topic: str, partition: int) -> dict[str, ErrorCode]:
    """The error each data API answers for the partition."""
    produced = await plane.produce(topic, partition, batch(b"x"))
    fetched = await plane.call(fetch_at(topic, partition, 0))
    listed = await plane.call(req(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
        {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1, "current_leader_epoch": -1}]}]))
    deleted = await plane.call(req(ApiKey.DELETE_RECORDS, 2, timeout=ms(1000), topics=[
        {"name": topic, "partitions": [{"partition_index": partition, "offset": 0}]}]))
    return {"produce": produced.error_code, "fetch": fetched.responses[0].partitions[0].error_code,
            "list_offsets": listed.topics[0].partitions[0].error_code,
            "delete_records": deleted.topics[0].partitions[0].error_code}


async def test_a_partition_given_up_answers_not_leader_and_a_retake_serves_at_its_epoch(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 2)
        assert (await plane.produce("t", 1, batch(b"a", b"b"))).error_code == E.none
        data = plane.data
        data.take_all = False  # as in cluster mode
        await data.give_up_partition("t", 1)
        assert data.partition("t", 1) is None
        assert await codes_for(plane, "t", 1) == dict.fromkeys(
            ("produce", "fetch", "list_offsets", "delete_records"), E.not_leader_or_follower)
        assert (await codes_for(plane, "t", 7))["produce"] == E.unknown_topic_or_partition  # no such partition
        assert (await plane.produce("t", 0, batch(b"c"))).error_code == E.none  # the other one still here

        topic = data.catalog.get("t")
        plog = await LocalLogFactory(None, data).open_topic_partition(topic, 1, 5)
        await data.take_partition("t", 1, plog, epoch=5)
        produced = await plane.produce("t", 1, batch(b"d"))
        assert (produced.error_code, produced.base_offset) == (E.none, 2)  # the log as it was, reopened
        fetched = (await plane.call(fetch_at("t", 1, 2, epoch=5))).responses[0].partitions[0]
        assert fetched.error_code == E.none
        assert [b.partition_leader_epoch for b in iter_batches(fetched.records)] == [5]
        stale = (await plane.call(fetch_at("t", 1, 0, epoch=4))).responses[0].partitions[0]
        assert stale.error_code == E.fenced_leader_epoch


async def test_a_fetch_parked_on_a_partition_given_up_is_answered(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        plane.data.take_all = False
        request = fetch_at("t", 0, 0, max_wait=60_000)
        pending = plane.send(request)
        assert isinstance(pending, Deferred)
        await asyncio.sleep(0)
        assert not pending.future.done()
        await plane.data.give_up_partition("t", 0)
        response = await plane.resolve(request, pending, timeout=5)
        assert response.responses[0].partitions[0].error_code == E.not_leader_or_follower


async def test_a_lost_partition_stops_at_once(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        plane.data.take_all = False
        part = plane.data.partition("t", 0)
        plane.data.lose_partition("t", 0)
        assert plane.data.partition("t", 0) is None
        assert (await plane.produce("t", 0, batch(b"x"))).error_code == E.not_leader_or_follower
        for _ in range(500):  # closed in the background
            if part.log._closed:
                break
            await asyncio.sleep(0.01)
        assert part.log._closed


async def test_local_mode_still_answers_unknown_for_a_partition_not_hosted(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.data.give_up_partition("t", 0)  # never happens in local mode; the answer stays Kafka's
        assert (await plane.produce("t", 0, batch(b"x"))).error_code == E.unknown_topic_or_partition


async def test_a_retake_rebuilds_the_producer_state_from_the_log(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        data = plane.data
        data.take_all = False
        first = batch(b"once", producer_id=9, producer_epoch=0, base_sequence=0)
        assert (await plane.produce("t", 0, batch(b"before"))).base_offset == 0
        assert (await plane.produce("t", 0, first)).base_offset == 1
        await data.give_up_partition("t", 0)
        plog = await LocalLogFactory(None, data).open_topic_partition(data.catalog.get("t"), 0, 1)
        await data.take_partition("t", 0, plog, epoch=1)
        retried = await plane.produce("t", 0, first)  # the producer's retry after the move
        assert (retried.error_code, retried.base_offset) == (E.none, 1)  # recognised: not appended twice
        assert data.partition("t", 0).log.log_end_offset == 2
