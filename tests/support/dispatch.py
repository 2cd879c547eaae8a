"""Drive the dispatcher in-process with request frames, decoding answers with kio."""

from __future__ import annotations

import struct
from typing import Any

from kio.index import load_entity_module
from kio.serial import entity_reader
from kio.static.constants import EntityType

from coordinator.app import build_dispatcher
from coordinator.config import Config
from coordinator.data_plane.topic_catalog import TopicCatalog
from coordinator.groups.settings import GroupSettings
from coordinator.node import Node
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.timers import Scheduler
from coordinator.services import Services
from protocol.build import build
from tests.support.wire_client import request_frame, response_class_for


def named_request(api: str, version: int, **fields):
    """A request of `api` (kio's module name, e.g. "metadata") built from keywords; Metadata's
    flags default to False."""
    if api == "metadata":
        for flag in ("allow_auto_topic_creation", "include_cluster_authorized_operations",
                     "include_topic_authorized_operations"):
            fields.setdefault(flag, False)
    module = load_entity_module(api, version, EntityType.request)
    cls = next(v for v in vars(module).values()
               if isinstance(v, type) and getattr(v, "__type__", None) is EntityType.request)
    return build(cls, **fields)


def known_topics(catalog: TopicCatalog, topics: dict[str, int]) -> TopicCatalog:
    """`catalog` (one without a store) with `topics` (name -> partition count) visible, made so at
    once without an event loop: such a catalog's commit never suspends."""
    commit = catalog.commit([catalog.reserve(name, count) for name, count in topics.items()])
    try:
        commit.send(None)
    except StopIteration:
        return catalog
    raise AssertionError("the catalog's commit suspended")


def make_services(*, scheduler: Scheduler | None = None, **overrides: str) -> Services:
    """`scheduler`: the groups' timers (e.g. a FakeScheduler for a test without an event loop; by default the
    running loop's, which a group's first request then needs)."""
    config = Config.load(overrides={"log.dirs": "/nonexistent-unused", **overrides}, environ={})
    node = Node(config.node_id, "test-cluster-id-00000A", host="broker.test", port=9092)
    groups = None if scheduler is None else GroupCoordinator(GroupSettings.from_config(config), scheduler)
    return Services(config, node, TopicCatalog(node.cluster_id, config.offsets_topic_num_partitions), groups)


class InProcess:
    def __init__(self, services: Services | None = None) -> None:
        self.services = services or make_services()
        self.dispatcher = build_dispatcher(self.services)

    def raw(self, frame_without_size: bytes) -> bytes | None:
        out = self.dispatcher.dispatch(frame_without_size, "127.0.0.1", 5555)
        assert out is None or isinstance(out, bytes)
        return out

    def call(self, request: Any, correlation_id: int = 7) -> Any:
        frame = request_frame(request, correlation_id)[4:]
        out = self.raw(frame)
        assert out is not None
        size, got = struct.unpack_from(">ii", out, 0)
        assert size == len(out) - 4 and got == correlation_id
        cls = response_class_for(request)
        offset = 8 if cls.__header_schema__.__version__ == 0 else 9
        response, used = entity_reader(cls)(out, offset)
        assert offset + used == len(out)
        return response
