"""The topics one request creates or deletes cost one catalog write + fsync, in a worker thread,
and new topics become visible only once that write is durable."""

from __future__ import annotations

import asyncio
import os
import threading

from kio.schema.errors import ErrorCode

from coordinator.data_plane import file_catalog_store as catalog_module
from coordinator.net.dispatch import Deferred
from protocol.apis import ApiKey
from tests.support.data_plane import Plane, batch, ms, req


class Writes:
    """Counts catalog writes and the threads they ran on; `gate` holds them while cleared."""

    def __init__(self, monkeypatch, fail: BaseException | None = None) -> None:
        self.threads: list[threading.Thread] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail = fail
        real = catalog_module.write_atomically

        def write(path: str, data: bytes) -> None:
            self.threads.append(threading.current_thread())
            self.gate.wait(10)
            if self.fail is not None:
                raise self.fail
            real(path, data)

        monkeypatch.setattr(catalog_module, "write_atomically", write)

    def reset(self) -> None:
        self.threads.clear()


def metadata(names, allow=True):
    return req(ApiKey.METADATA, 12, topics=[{"name": n, "topic_id": None} for n in names],
               allow_auto_topic_creation=allow, include_topic_authorized_operations=False,
               include_cluster_authorized_operations=False)


def create(names):
    return req(ApiKey.CREATE_TOPICS, 7, timeout=ms(1000), validate_only=False, topics=[
        {"name": n, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []} for n in names])


async def test_one_write_off_the_loop_per_request(tmp_path, monkeypatch):
    writes = Writes(monkeypatch)
    async with Plane(str(tmp_path)) as plane:
        names = [f"m{i}" for i in range(50)]
        answer = await plane.call(metadata(names))
        assert {t.error_code for t in answer.topics} == {ErrorCode.leader_not_available}
        assert len(writes.threads) == 1 and writes.threads[0] is not threading.current_thread()

        writes.reset()
        answer = await plane.call(create([f"c{i}" for i in range(20)]))
        assert {t.error_code for t in answer.topics} == {ErrorCode.none}
        assert len(writes.threads) == 1 and writes.threads[0] is not threading.current_thread()

        writes.reset()
        produce = req(ApiKey.PRODUCE, 9, acks=-1, timeout=ms(5000), transactional_id=None, topic_data=[
            {"name": f"p{i}", "partition_data": [{"index": 0, "records": batch(b"x")}]} for i in range(3)])
        answer = await plane.call(produce)
        assert [r.partition_responses[0].error_code for r in answer.responses] == [ErrorCode.none] * 3
        assert len(writes.threads) == 1

        writes.reset()
        answer = await plane.call(req(ApiKey.DELETE_TOPICS, 4, topic_names=names[:10], timeout=ms(1000)))
        assert {r.error_code for r in answer.responses} == {ErrorCode.none}
        assert len(writes.threads) == 1 and writes.threads[0] is not threading.current_thread()
        assert not any(os.path.exists(tmp_path / f"m{i}-0") for i in range(10))


async def test_new_topics_are_visible_once_durable(tmp_path, monkeypatch):
    writes = Writes(monkeypatch)
    async with Plane(str(tmp_path)) as plane:
        writes.gate.clear()
        request = metadata(["slow"])
        pending = plane.send(request)
        assert isinstance(pending, Deferred)
        for _ in range(100):  # until the write has started in its thread
            if writes.threads:
                break
            await asyncio.sleep(0.01)
        assert writes.threads and plane.data.catalog.get("slow") is None
        again = await plane.call(metadata(["slow"]))  # another client, while the topic is being created
        assert again.topics[0].error_code == ErrorCode.leader_not_available
        refused = await plane.call(create(["slow"]))
        assert refused.topics[0].error_code == ErrorCode.topic_already_exists
        writes.gate.set()
        assert (await plane.resolve(request, pending)).topics[0].error_code == ErrorCode.leader_not_available
        assert plane.data.catalog.get("slow") is not None
        assert (await plane.call(metadata(["slow"]))).topics[0].error_code == ErrorCode.none


async def test_a_failed_catalog_write_creates_nothing(tmp_path, monkeypatch):
    writes = Writes(monkeypatch, fail=OSError(28, "No space left on device"))
    async with Plane(str(tmp_path)) as plane:
        answer = await plane.call(create(["a", "b"]))
        # errors.error_code_for(OSError)
        assert [t.error_code for t in answer.topics] == [ErrorCode.unknown_server_error] * 2
        assert plane.data.catalog.get("a") is None and plane.data.partition("a", 0) is None
        assert not any(name.startswith(("a-", "b-")) for name in os.listdir(tmp_path))
        writes.fail = None
        answer = await plane.call(create(["a"]))  # the names are free again
        assert answer.topics[0].error_code == ErrorCode.none
