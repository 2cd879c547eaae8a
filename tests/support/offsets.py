"""Helpers for the offsets tests: kio request builders and an in-process dispatcher over the
fake-clock group harness (MemoryLog whose writes the test completes)."""

from __future__ import annotations

import datetime
import importlib
import time
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_reader
from kio.static.primitive import i32, i64, i64Timedelta

from coordinator.app import build_dispatcher
from coordinator.net.dispatch import Deferred, Dispatcher
from tests.support.dispatch import known_topics, make_services
from tests.support.groups import Harness
from tests.support.wire_client import WireClient, request_frame, response_class_for


def schema(api: str, version: int, kind: str = "request"):
    return importlib.import_module(f"kio.schema.{api}.v{version}.{kind}")


def commit_request(version: int, group: str, offsets: dict[tuple[str, int], int], *, generation: int = -1,
                   member: str = "", instance: str | None = None, metadata: str | None = "",
                   epoch: int = -1, retention_ms: int = -1) -> Any:
    m = schema("offset_commit", version)
    by_topic: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        kwargs: dict[str, Any] = {"partition_index": i32(partition), "committed_offset": i64(offset),
                                  "committed_metadata": metadata}
        if version >= 6:
            kwargs["committed_leader_epoch"] = i32(epoch)
        by_topic.setdefault(topic, []).append(m.OffsetCommitRequestPartition(**kwargs))
    topics = tuple(m.OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items())
    kwargs = {"group_id": group, "generation_id_or_member_epoch": i32(generation), "member_id": member,
              "topics": topics}
    if 2 <= version <= 4:
        kwargs["retention_time"] = i64Timedelta.parse(datetime.timedelta(milliseconds=retention_ms))
    if version >= 7:
        kwargs["group_instance_id"] = instance
    return m.OffsetCommitRequest(**kwargs)


def fetch_request(version: int, group: str, topics: dict[str, list[int]] | None, *,
                  require_stable: bool = False, groups: dict[str, dict[str, list[int]] | None] | None = None) -> Any:
    m = schema("offset_fetch", version)
    if version >= 8:
        groups = groups if groups is not None else {group: topics}
        return m.OffsetFetchRequest(groups=tuple(
            m.OffsetFetchRequestGroup(group_id=g, topics=None if ts is None else tuple(
                m.OffsetFetchRequestTopics(name=t, partition_indexes=tuple(i32(p) for p in ps))
                for t, ps in ts.items())) for g, ts in groups.items()), require_stable=require_stable)
    kwargs: dict[str, Any] = {"group_id": group, "topics": None if topics is None else tuple(
        m.OffsetFetchRequestTopic(name=t, partition_indexes=tuple(i32(p) for p in ps)) for t, ps in topics.items())}
    if version >= 7:
        kwargs["require_stable"] = require_stable
    return m.OffsetFetchRequest(**kwargs)


def delete_request(group: str, topics: dict[str, list[int]]) -> Any:
    m = schema("offset_delete", 0)
    return m.OffsetDeleteRequest(group_id=group, topics=tuple(
        m.OffsetDeleteRequestTopic(name=t, partitions=tuple(m.OffsetDeleteRequestPartition(partition_index=i32(p))
                                                            for p in ps)) for t, ps in topics.items()))


def decode(request: Any, out: bytes) -> Any:
    cls = response_class_for(request)
    offset = 8 if cls.__header_schema__.__version__ == 0 else 9
    response, used = entity_reader(cls)(bytes(out), offset)  # a sliced answer's frame is a bytearray (RoomyBody)
    assert offset + used == len(out)
    return response


# The topics the offsets tests commit to, known to OffsetsHarness' catalog (as in Kafka, a commit
# to a topic or partition the server does not know answers UNKNOWN_TOPIC_OR_PARTITION).
TEST_TOPICS = {name: 1 << 20 for name in ("t", "u", "a", "b", "x", "zz", "topic", "orders", "payments", "old")}


class OffsetsHarness(Harness):
    """The group Harness plus the real dispatcher bound to its coordinator; its topic catalog
    knows `topics` (default TEST_TOPICS)."""

    def __init__(self, topics: dict[str, int] | None = None, **settings: Any) -> None:
        super().__init__(**settings)
        services = make_services()
        known_topics(services.topics, TEST_TOPICS if topics is None else topics)
        services.groups = self.coordinator
        self.services = services
        self.dispatcher = build_dispatcher(services)

    def send(self, request: Any) -> Any:
        """Dispatch; returns the decoded response, or the Deferred if it waits for a write."""
        out = self.dispatcher.dispatch(request_frame(request, 3)[4:], "127.0.0.1", 5555)
        if isinstance(out, Deferred):
            return out
        return decode(request, out)

    def answer(self, request: Any, deferred: Deferred) -> Any:
        assert deferred.future.done(), "the answer still waits for its write"
        return decode(request, Dispatcher.finish(deferred))

    def commit(self, request: Any, complete: bool = True) -> Any:
        out = self.send(request)
        if isinstance(out, Deferred) and complete:
            self.log.complete()
            return self.answer(request, out)
        return out


def codes(response: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def fetched(topics: Any) -> dict[tuple[str, int], tuple]:
    out = {}
    for t in topics:
        for p in t.partitions:
            out[(t.name, p.partition_index)] = (p.committed_offset, getattr(p, "committed_leader_epoch", None),
                                                p.metadata, p.error_code)
    return out


def mixed_commit(version: int, metadata: dict[int, str]):
    m = schema("offset_commit", version)
    parts = tuple(m.OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(1),
                                                 committed_leader_epoch=i32(-1), committed_metadata=meta)
                  for p, meta in metadata.items())
    return m.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=i32(-1), member_id="",
                                 group_instance_id=None,
                                 topics=(m.OffsetCommitRequestTopic(name="t", partitions=parts),))


def wait_loaded(client: WireClient, group: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = client.call(fetch_request(9, group, None))
        if response.groups[0].error_code == ErrorCode.none:
            return
        assert response.groups[0].error_code == ErrorCode.coordinator_load_in_progress
        time.sleep(0.05)
    raise AssertionError("offsets partition did not load")
