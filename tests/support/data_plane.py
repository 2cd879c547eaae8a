"""In-process harness for data-plane handlers: a started DataPlane in a temp dir, the real
dispatcher, requests built from keywords, deferred (awaitable) responses awaited."""

from __future__ import annotations

import asyncio
import datetime
import struct
from typing import Any

from kio.serial import entity_reader

from coordinator.app import build_dispatcher
from coordinator.config import Config
from coordinator.data_plane import broker_configs
from coordinator.data_plane.broker_configs import DynamicBrokerConfigs
from coordinator.data_plane.file_catalog_store import FileCatalogStore
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.net.dispatch import Deferred, Dispatcher
from coordinator.node import Node
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import build
from storage.batch import build_batch
from tests.support.wire_client import request_frame, response_class_for


def req(api: ApiKey, version: int, **values: Any) -> Any:
    return build(API_TABLE[int(api)].requests[version], **values)


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def batch(*values: bytes, ts: int = 1_000, **kwargs: Any) -> bytes:
    return build_batch([(None, v, ts + i) for i, v in enumerate(values)], **kwargs)


class Plane:
    def __init__(self, log_dir: str, catalog: TopicCatalog | None = None, dynamic_store: Any = None,
                 **overrides: str) -> None:
        """`catalog`: the topic catalog to use (default: local mode's, kept in `log_dir`); `dynamic_store`: the
        dynamic broker configs' store (default: local mode's, in `log_dir`), read at __aenter__."""
        self.log_dir = log_dir
        self.config = Config.load(overrides={"log.dirs": log_dir, **overrides}, environ={})
        self.node = Node(self.config.node_id, "test-cluster-id-00000A", host="broker.test", port=9092)
        if catalog is None:
            catalog = TopicCatalog(self.node.cluster_id, 50, FileCatalogStore(log_dir))
        self.services = Services(self.config, self.node, catalog)
        self.data = self.services.data
        if dynamic_store is not None:
            self.services.dynamic = DynamicBrokerConfigs(self.config.node_id, dynamic_store, self.data.base_configs)
            broker_configs.attach(self.data, self.services.dynamic)
        self.dispatcher = build_dispatcher(self.services)
        self.cid = 0

    async def __aenter__(self) -> Plane:
        await self.services.dynamic.refresh()
        await self.data.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.data.stop()

    def send(self, request: Any) -> bytes | Deferred | None:
        self.cid += 1
        return self.dispatcher.dispatch(request_frame(request, self.cid)[4:], "127.0.0.1", 5555)

    def decode(self, request: Any, out: bytes) -> Any:
        cls = response_class_for(request)
        offset = 8 if cls.__header_schema__.__version__ == 0 else 9
        response, used = entity_reader(cls)(out, offset)
        assert offset + used == len(out) and struct.unpack_from(">i", out, 0)[0] == len(out) - 4
        return response

    async def resolve(self, request: Any, out: bytes | Deferred | None, timeout: float = 10.0) -> Any:
        if isinstance(out, Deferred):
            await asyncio.wait_for(asyncio.shield(out.future), timeout)
            out = Dispatcher.finish(out)
        return None if out is None else self.decode(request, out)

    async def answer_frame(self, request: Any) -> tuple[bytes, bool]:
        """The answer frame with its correlation id zeroed (each request has its own), and
        whether it was deferred."""
        out = self.send(request)
        deferred = isinstance(out, Deferred)
        if deferred:
            await asyncio.wait_for(asyncio.shield(out.future), 10)
            out = Dispatcher.finish(out)
        assert isinstance(out, bytes)
        return out[:4] + bytes(4) + out[8:], deferred

    async def call(self, request: Any) -> Any:
        return await self.resolve(request, self.send(request))

    # --- shortcuts ---------------------------------------------------------------
    async def create(self, name: str, partitions: int = 1, configs: dict | None = None, version: int = 7) -> Any:
        response = await self.call(req(ApiKey.CREATE_TOPICS, version, timeout=ms(1000), validate_only=False, topics=[
            {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
             "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}]))
        return response.topics[0]

    async def produce(self, topic: str, partition: int, records: bytes | None, acks: int = -1,
                      version: int = 9, transactional_id: str | None = None) -> Any:
        request = req(ApiKey.PRODUCE, version, acks=acks, timeout=ms(5000), transactional_id=transactional_id,
                      topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": records}]}])
        response = await self.call(request)
        return None if response is None else response.responses[0].partition_responses[0]

    def fetch_request(self, topic: str, partition: int, offset: int, *, max_wait: int = 0, min_bytes: int = 1,
                      version: int = 12, max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20) -> Any:
        return req(ApiKey.FETCH, version, max_wait=ms(max_wait), min_bytes=min_bytes, max_bytes=max_bytes,
                   isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                   topics=[{"topic": topic, "partitions": [
                       {"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max_bytes}]}])

    async def fetch(self, topic: str, partition: int, offset: int, **kwargs: Any) -> Any:
        response = await self.call(self.fetch_request(topic, partition, offset, **kwargs))
        return response.responses[0].partitions[0]


def creatable(name, partitions=1, rf=1, configs=None, assignments=()):
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": [{"partition_index": i, "broker_ids": b} for i, b in assignments],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


async def create_many(plane, topics, version=7, validate_only=False):
    response = await plane.call(req(ApiKey.CREATE_TOPICS, version, timeout=ms(1000), validate_only=validate_only,
                                    topics=topics))
    return {t.name: t for t in response.topics}
