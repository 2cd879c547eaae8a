"""Fetch's per-request bounds: fetch.max.bytes caps an answer whatever max_bytes the request
asks for, and a partition listed several times is read once, as Kafka's LinkedHashMap of
fetch partitions does (first place, last listing's fields)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from protocol.apis import ApiKey
from storage.batch import iter_batches
from tests.support.data_plane import Plane, batch, ms, req

BIG = 2**31 - 1


def fetch(topics: list[tuple[str, list[tuple[int, int, int]]]], max_bytes: int = BIG, version: int = 12):
    """A Fetch of [(topic, [(partition, offset, partition_max_bytes)])], listed as given."""
    return req(ApiKey.FETCH, version, max_wait=ms(0), min_bytes=1, max_bytes=max_bytes, isolation_level=0,
               session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
               topics=[{"topic": name, "partitions": [
                   {"partition": p, "fetch_offset": offset, "partition_max_bytes": limit}
                   for p, offset, limit in parts]} for name, parts in topics])


def shape(response) -> list[tuple[str, list[tuple[int, list[int]]]]]:
    return [(t.topic, [(p.partition_index, [b.base_offset for b in iter_batches(p.records or b"")])
                       for p in t.partitions]) for t in response.responses]


async def test_a_partition_listed_many_times_is_read_once_with_its_last_listing(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", partitions=2)
        for i in range(3):
            await plane.produce("t", 0, batch(b"x%d" % i))
        await plane.produce("t", 1, batch(b"y"))
        listed = [("t", [(0, 0, BIG)] * 19 + [(0, 2, BIG)]), ("t", [(1, 0, BIG)]), ("t", [(0, 1, BIG)])]
        response = await plane.call(fetch(listed))
        # (t,0) keeps its first place and takes its last listing's offset (1); the third topic
        # entry holds nothing new, so the two partitions share the first entry.
        assert shape(response) == [("t", [(0, [1, 2]), (1, [0])])]
        records = sum(len(p.records) for t in response.responses for p in t.partitions)
        assert records == len(batch(b"x1")) * 2 + len(batch(b"y"))


async def test_a_topic_between_two_listings_keeps_kafkas_grouping(tmp_path):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("a", partitions=2)
        await plane.create("b")
        listed = [("a", [(0, 0, BIG)]), ("b", [(0, 0, BIG)]), ("a", [(1, 0, BIG), (0, 0, BIG)])]
        response = await plane.call(fetch(listed))
        assert shape(response) == [("a", [(0, [])]), ("b", [(0, [])]), ("a", [(1, [])])]


async def test_fetch_max_bytes_caps_a_request_asking_for_more(tmp_path):
    one = len(batch(b"z" * 100))
    async with Plane(str(tmp_path), **{"fetch.max.bytes": str(one * 3)}) as plane:
        await plane.create("t", partitions=2)
        for p in (0, 1):
            for _ in range(5):
                await plane.produce("t", p, batch(b"z" * 100))
        response = await plane.call(fetch([("t", [(0, 0, BIG), (1, 0, BIG)])]))
        assert shape(response) == [("t", [(0, [0, 1, 2]), (1, [])])]
        # the request's own max_bytes still wins when it is smaller
        response = await plane.call(fetch([("t", [(0, 0, BIG), (1, 0, BIG)])], max_bytes=one * 2))
        assert shape(response) == [("t", [(0, [0, 1]), (1, [])])]


async def test_the_first_batch_may_pass_fetch_max_bytes(tmp_path):
    async with Plane(str(tmp_path), **{"fetch.max.bytes": "10"}) as plane:
        await plane.create("t")
        await plane.produce("t", 0, batch(b"a" * 50))
        await plane.produce("t", 0, batch(b"b" * 50))
        part = (await plane.call(fetch([("t", [(0, 0, BIG)])]))).responses[0].partitions[0]
        assert part.error_code == ErrorCode.none
        assert [b.base_offset for b in iter_batches(part.records)] == [0]  # KIP-74: progress, one batch
