"""Our server without sockets, for the in-process profiles (bench/profile/): requests straight into the
dispatcher, a fake transport under a real Connection, and the server's GC settings."""

from __future__ import annotations

import gc
import struct
from typing import Any

from bench.lib.commits import PARTITIONS, TOPIC
from bench.lib.wire import decode_response, request_frame
from coordinator.app import YOUNG_GC_THRESHOLD, build_dispatcher
from coordinator.config import Config
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.groups.consumer.catalog_view import CatalogTopics
from coordinator.groups.settings import GroupSettings
from coordinator.net.dispatch import Deferred, Dispatcher
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog
from coordinator.services import Node, Services

PEER = ("127.0.0.1", 1)


def server_gc_settings() -> None:
    """What coordinator.app.run does before serving, so that collections here cost what they cost there."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_GC_THRESHOLD, 10, 10)


def known_topics(catalog: TopicCatalog, topics: dict[str, int]) -> None:
    """`topics` (name -> partition count) visible in `catalog` (one without a store) at once, without
    an event loop: such a catalog's commit never suspends. A commit to an unknown topic would be
    answered UNKNOWN_TOPIC_OR_PARTITION, as Kafka does."""
    commit = catalog.commit([catalog.reserve(name, count) for name, count in topics.items()])
    try:
        commit.send(None)
    except StopIteration:
        return
    raise AssertionError("the catalog's commit suspended")


class InProcessClient:
    """Request frames (without their size prefix) into a dispatcher; answers as it writes them."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def send(self, frames: list[bytes]) -> list[Any]:
        """Dispatch each frame: an answer, or a Deferred one."""
        dispatch = self.dispatcher.dispatch
        return [dispatch(frame, "127.0.0.1", 1) for frame in frames]

    @staticmethod
    async def answers(sent: list[Any]) -> list[bytes]:
        """The answer frames (size prefix first); waits for deferred ones as the server's event loop does."""
        out = []
        for item in sent:
            if isinstance(item, Deferred):
                await item.future
                item = Dispatcher.finish(item)
            out.append(item)
        return out

    async def call(self, request: Any) -> Any:
        """One request entity in, its decoded answer out."""
        (answer,) = await self.answers(self.send([request_frame(request)[4:]]))
        return decode_response(type(request), answer[4:])


class DispatcherRig(InProcessClient):
    """The real dispatcher over a MemoryLog (no disk; writes complete when `log.complete()` says) and a fake
    clock (timers fire only when `clock.advance` says), groups without an initial rebalance delay."""

    def __init__(self) -> None:
        config = Config.load(overrides={"log.dirs": "/nonexistent-unused"}, environ={})
        node = Node(config.node_id, "bench-cluster-id-000000", host="127.0.0.1", port=9092)
        self.services = Services(config, node, TopicCatalog(node.cluster_id, config.offsets_topic_num_partitions))
        known_topics(self.services.topics, {TOPIC: PARTITIONS})  # what the commit frames commit to
        self.log = MemoryLog(auto=False)
        self.clock = FakeScheduler()
        self.services.groups = GroupCoordinator(GroupSettings(initial_rebalance_delay_ms=0), self.clock, self.log)
        self.services.groups.topic_view = CatalogTopics(self.services.topics)  # as Services wires its own
        super().__init__(build_dispatcher(self.services))


class FakeTransport:
    """What a Connection needs of a transport; keeps the bytes of the answers since `take`."""

    def __init__(self) -> None:
        self.written = bytearray()
        self.reading_paused = False

    def get_extra_info(self, name: str) -> object:
        return PEER if name == "peername" else None

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def write(self, data: bytes) -> None:
        self.written += data

    def take(self) -> bytes:
        data = bytes(self.written)
        self.written.clear()
        return data

    def pause_reading(self) -> None:
        self.reading_paused = True

    def resume_reading(self) -> None:
        self.reading_paused = False

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def split_answers(data: bytes) -> list[bytes]:
    """Size-prefixed answer frames -> their bodies."""
    out, pos = [], 0
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        out.append(data[pos + 4:pos + 4 + size])
        pos += 4 + size
    return out
