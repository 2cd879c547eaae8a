"""Helpers for the KIP-848 consumer-group tests: a fake topic catalog, and a fake-clock harness whose members
heartbeat as a real consumer does (they report what they own, give up what they are told to revoke)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.model import Assignment, TopicMetadata
from coordinator.groups.consumer.params import HeartbeatAnswer, HeartbeatParams
from coordinator.groups.settings import GroupSettings
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.shard import Shard
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog


class FakeTopics:
    """A topic catalog: add, grow and delete topics; `version` moves on each change."""

    def __init__(self, **topics: int) -> None:
        self.version = 0
        self.by_name: dict[str, TopicMetadata] = {}
        for name, partitions in topics.items():
            self.add(name, partitions)

    def add(self, name: str, partitions: int) -> uuid.UUID:
        topic_id = uuid.uuid5(uuid.NAMESPACE_DNS, name)
        self.by_name[name] = TopicMetadata(topic_id, name, partitions)
        self.version += 1
        return topic_id

    def delete(self, name: str) -> None:
        del self.by_name[name]
        self.version += 1

    def topic(self, name: str) -> TopicMetadata | None:
        return self.by_name.get(name)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return next((t.name for t in self.by_name.values() if t.topic_id == topic_id), None)

    def names(self) -> Iterable[str]:
        return list(self.by_name)

    def id(self, name: str) -> uuid.UUID:
        return uuid.uuid5(uuid.NAMESPACE_DNS, name)


class ConsumerHarness:
    """A GroupCoordinator on a FakeScheduler and a MemoryLog (writes complete when the test says, or at once
    with `auto_complete`)."""

    def __init__(self, topics: FakeTopics | None = None, auto_complete: bool = True, **settings: Any) -> None:
        self.clock = FakeScheduler()
        self.log = MemoryLog(auto=False)
        self.auto_complete = auto_complete
        self.topics = topics if topics is not None else FakeTopics(orders=6)
        self.coordinator = GroupCoordinator(GroupSettings(**settings), self.clock, self.log)
        self.coordinator.topic_view = self.topics

    def shard(self, group_id: str = "g") -> Shard:
        return self.coordinator.shard_for(group_id)

    def group(self, group_id: str = "g") -> ConsumerGroup:
        return self.shard(group_id).consumer_groups[group_id]

    def heartbeat(self, member_id: str = "", epoch: int = 0, *, group_id: str = "g", topics: tuple[str, ...] | None
                  = None, owned: Assignment | None = None, instance: str | None = None, rebalance_ms: int = -1,
                  regex: str | None = None, assignor: str | None = None, rack: str | None = None,
                  describable: Callable[[str], bool] | None = None) -> HeartbeatAnswer:
        if epoch == 0:
            topics = ("orders",) if topics is None and regex is None else topics
            owned = {} if owned is None else owned
            rebalance_ms = 300_000 if rebalance_ms == -1 else rebalance_ms
        params = HeartbeatParams(group_id, member_id, epoch, instance, rack, rebalance_ms, topics, regex, assignor,
                                 owned, "client", "/127.0.0.1", describable)
        answer, write = self.shard(group_id).consumer_heartbeat(params)
        if self.auto_complete:
            self.log.complete()
        return answer

    def records(self) -> list:
        return self.log.all_records()


class Consumer:
    """One member as a client runs it: joins, heartbeats with its epoch, owns what it was given, and gives up
    what a new assignment leaves out (reported owned = its assignment after applying the answer)."""

    def __init__(self, harness: ConsumerHarness, group_id: str = "g", topics: tuple[str, ...] = ("orders",),
                 instance: str | None = None) -> None:
        self.h = harness
        self.group_id = group_id
        self.topics = topics
        self.instance = instance
        self.member_id = ""
        self.epoch = 0
        self.owned: dict[uuid.UUID, frozenset[int]] = {}

    def beat(self, full: bool = False) -> HeartbeatAnswer:
        joining = self.epoch == 0
        answer = self.h.heartbeat(self.member_id, self.epoch, group_id=self.group_id,
                                  topics=self.topics if joining or full else None,
                                  owned=dict(self.owned) if not joining else None, instance=self.instance)
        self.member_id, self.epoch = answer.member_id, answer.member_epoch
        if answer.assignment is not None:
            self.owned = dict(answer.assignment)
        return answer

    def partitions(self) -> set[tuple[uuid.UUID, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}
