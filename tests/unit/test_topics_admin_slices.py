"""CreateTopics and DeleteTopics naming more than SLICE topics are worked through and answered
in slices that yield to the loop, with the bytes of the generic path."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.handlers import sliced_encoding
from protocol.apis import ApiKey
from tests.support.data_plane import Plane, ms, req


def create(version: int, names: list[str], validate_only: bool):
    return req(ApiKey.CREATE_TOPICS, version, timeout=ms(1000), validate_only=validate_only, topics=[
        {"name": n, "num_partitions": 2, "replication_factor": 1, "assignments": [],
         "configs": [{"name": "retention.ms", "value": "1000"}]} for n in names])


def delete(version: int, names: list[str]):
    if version >= 6:
        return req(ApiKey.DELETE_TOPICS, version, timeout=ms(1000),
                   topics=[{"name": n, "topic_id": uuid.UUID(int=0)} for n in names])
    return req(ApiKey.DELETE_TOPICS, version, timeout=ms(1000), topic_names=names)


@pytest.mark.parametrize("version", range(2, 8))
async def test_create_topics_in_slices(tmp_path, monkeypatch, version):
    names = ["a", "b", "dup", "dup", "bad name!", "exists", "c"]
    async with Plane(str(tmp_path)) as plane:
        await plane.create("exists")
        generic, deferred = await plane.answer_frame(create(version, names, validate_only=True))
        assert not deferred
        monkeypatch.setattr(sliced_encoding, "SLICE", 2)
        monkeypatch.setattr(sliced_encoding, "BATCH", 2)
        sliced, deferred = await plane.answer_frame(create(version, names, validate_only=True))
        assert deferred and sliced == generic
        made, deferred = await plane.answer_frame(create(version, names, validate_only=False))
        got = {t.name: t.error_code for t in plane.decode(create(version, names, False), made).topics}
        assert deferred and {n: got[n] for n in ("a", "b", "c")} == dict.fromkeys("abc", ErrorCode.none)
        assert all(plane.data.partition(n, 1) is not None for n in "abc")


@pytest.mark.parametrize("version", range(1, 7))
async def test_delete_topics_in_slices(tmp_path, monkeypatch, version):
    async with Plane(str(tmp_path)) as plane:
        unknown = ["x", "y", "dup", "dup", "z"]
        generic, deferred = await plane.answer_frame(delete(version, unknown))
        assert not deferred
        monkeypatch.setattr(sliced_encoding, "SLICE", 2)
        monkeypatch.setattr(sliced_encoding, "BATCH", 2)
        sliced, deferred = await plane.answer_frame(delete(version, unknown))
        assert deferred and sliced == generic
        for name in ("p", "q", "r"):
            await plane.create(name)
        gone, deferred = await plane.answer_frame(delete(version, ["p", "q", "r", "x"]))
        codes = {r.name: r.error_code for r in plane.decode(delete(version, []), gone).responses}
        assert deferred and codes == {"p": ErrorCode.none, "q": ErrorCode.none, "r": ErrorCode.none,
                                      "x": ErrorCode.unknown_topic_or_partition}
        assert all(plane.data.catalog.get(n) is None for n in "pqr")
