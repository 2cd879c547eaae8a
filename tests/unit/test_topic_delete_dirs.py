"""DeleteTopics removes only directories it renamed: a long topic name re-created at once keeps its
data, and a rename that fails refuses the delete instead of removing the data by path later."""

from __future__ import annotations

import asyncio
import errno
import os

from kio.schema.errors import ErrorCode

from coordinator.data_plane.topic_catalog import MAX_NAME_LENGTH
from protocol.apis import ApiKey
from storage.log_dirs import is_delete_dir
from tests.support.data_plane import Plane, batch, ms, req

LONG = "x" * MAX_NAME_LENGTH


def delete(name):
    return req(ApiKey.DELETE_TOPICS, 5, topic_names=[name], timeout=ms(1000))


def create(name):
    return req(ApiKey.CREATE_TOPICS, 7, timeout=ms(1000), validate_only=False, topics=[
        {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}])


def hold_removals(plane, monkeypatch) -> asyncio.Event:
    """Deleted topics' directories are removed only once the returned event is set (the slow disk
    of the race: the removal comes after the re-created topic's first writes)."""
    release, removal = asyncio.Event(), plane.data.delete_topics

    async def held(detached):
        await release.wait()
        return await removal(detached)

    monkeypatch.setattr(plane.data, "delete_topics", held)
    return release


async def test_long_topic_recreated_while_its_delete_finishes_keeps_acknowledged_records(tmp_path, monkeypatch):
    async with Plane(str(tmp_path)) as plane:
        await plane.create(LONG)
        release = hold_removals(plane, monkeypatch)
        assert (await plane.produce(LONG, 0, batch(b"old"))).error_code == ErrorCode.none
        pending_delete, pending_create = plane.send(delete(LONG)), plane.send(create(LONG))  # pipelined
        assert (await plane.resolve(create(LONG), pending_create)).topics[0].error_code == ErrorCode.none
        for i in range(3):
            acked = await plane.produce(LONG, 0, batch(b"new%d" % i))
            assert (acked.error_code, acked.base_offset) == (ErrorCode.none, i)
        release.set()
        assert (await plane.resolve(delete(LONG), pending_delete)).responses[0].error_code == ErrorCode.none
        assert not any(is_delete_dir(name) for name in os.listdir(tmp_path))
    async with Plane(str(tmp_path)) as again:
        assert (await again.fetch(LONG, 0, 0)).high_watermark == 3


async def test_a_failed_rename_refuses_the_delete_and_keeps_the_data(tmp_path, monkeypatch):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t", 3)
        for p in range(3):
            await plane.produce("t", p, batch(b"kept"))
        real_rename = os.rename

        def rename(src, dst):
            if str(src).endswith("t-2"):
                raise OSError(errno.EIO, "Input/output error")
            return real_rename(src, dst)

        monkeypatch.setattr(os, "rename", rename)
        answer = (await plane.call(delete("t"))).responses[0]
        assert answer.error_code == ErrorCode.kafka_storage_error and "partition 2" in answer.error_message
        monkeypatch.setattr(os, "rename", real_rename)
        assert sorted(os.listdir(tmp_path / "t-0")) and not any(is_delete_dir(n) for n in os.listdir(tmp_path))
        for p in range(3):  # the renames done were undone: every partition still works where it was
            assert (await plane.produce("t", p, batch(b"more"))).base_offset == 1
        assert (await plane.call(delete("t"))).responses[0].error_code == ErrorCode.none
        assert not [n for n in os.listdir(tmp_path) if n.startswith("t-")]


async def test_a_partition_dir_already_gone_still_deletes_and_never_touches_the_old_path(tmp_path, monkeypatch):
    async with Plane(str(tmp_path)) as plane:
        await plane.create("t")
        await plane.produce("t", 0, batch(b"a"))
        release = hold_removals(plane, monkeypatch)
        part = plane.data.partition("t", 0)
        os.rename(part.log.path, str(tmp_path / "elsewhere"))  # removed behind the server's back
        pending = plane.send(delete("t"))
        assert (await plane.call(create("t"))).topics[0].error_code == ErrorCode.none
        assert (await plane.produce("t", 0, batch(b"b"))).base_offset == 0
        release.set()
        assert (await plane.resolve(delete("t"), pending)).responses[0].error_code == ErrorCode.none
    async with Plane(str(tmp_path)) as again:
        assert (await again.fetch("t", 0, 0)).high_watermark == 1
