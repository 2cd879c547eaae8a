"""Helpers for the classic group tests: a fake-clock harness and consumer-protocol bytes."""

from __future__ import annotations

import struct
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.groups.classic_group import ClassicGroup, RebalanceRecord
from coordinator.groups.classic_member import JoinResult, SyncResult
from coordinator.groups.params import JoinParams, LeavingMember, SyncParams
from coordinator.groups.settings import GroupSettings
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.shard import Shard
from coordinator.runtime.timers import FakeScheduler
from coordinator.runtime.writes import MemoryLog

RANGE = (("range", b"range-meta"),)


class Harness:
    """One GroupCoordinator on a FakeScheduler and a MemoryLog whose writes a test completes."""

    def __init__(self, **settings: Any) -> None:
        settings.setdefault("initial_rebalance_delay_ms", 0)
        self.clock = FakeScheduler()
        self.log = MemoryLog(auto=False)
        self.settings = GroupSettings(**settings)
        self.coordinator = GroupCoordinator(self.settings, self.clock, self.log)

    def shard(self, group_id: str = "g") -> Shard:
        """Where the handlers go in: the shard's entry points write what the group operations return."""
        return self.coordinator.shard_for(group_id)

    def group(self, group_id: str = "g") -> ClassicGroup:
        group = self.coordinator.group(group_id)
        assert group is not None
        return group

    def join(self, member_id: str = "", *, group_id: str = "g", instance: str | None = None,
             session: int = 10000, rebalance: int | None = None, protocols=RANGE, ptype: str = "consumer",
             version: int = 9, client_id: str = "client", reason: str | None = None) -> list[JoinResult]:
        replies: list[JoinResult] = []
        params = JoinParams(group_id, member_id, instance, session, session if rebalance is None else rebalance,
                            ptype, tuple(protocols), reason, client_id, "/127.0.0.1", version)
        self.shard(group_id).join(params, replies.append)
        return replies

    def new_member(self, *, group_id: str = "g", **kwargs: Any) -> tuple[str, list[JoinResult]]:
        """JoinGroup v4+ for a dynamic member: MEMBER_ID_REQUIRED, then the real join."""
        first = self.join(group_id=group_id, **kwargs)
        assert first and first[0].error is ErrorCode.member_id_required, first
        member_id = first[0].member_id
        return member_id, self.join(member_id, group_id=group_id, **kwargs)

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None, *,
             group_id: str = "g", instance: str | None = None, version: int = 5,
             ptype: str | None = "consumer", pname: str | None = "range") -> list[SyncResult]:
        replies: list[SyncResult] = []
        params = SyncParams(group_id, member_id, instance, generation, ptype, pname,
                            tuple((assignments or {}).items()), version)
        self.shard(group_id).sync(params, replies.append)
        return replies

    def heartbeat(self, member_id: str, generation: int, *, group_id: str = "g",
                  instance: str | None = None) -> ErrorCode:
        return self.shard(group_id).heartbeat(group_id, member_id, instance, generation)

    def leave(self, *members: LeavingMember | str, group_id: str = "g"):
        leaving = [m if isinstance(m, LeavingMember) else LeavingMember(m) for m in members]
        return self.shard(group_id).leave(group_id, leaving)

    def stable_group(self, n: int, group_id: str = "g", **kwargs: Any) -> list[str]:
        """n dynamic members joined and synced; the group is Stable. Returns member ids, leader first."""
        ids, waiting = [], []
        for _ in range(n):
            member_id, replies = self.new_member(group_id=group_id, **kwargs)
            ids.append(member_id)
            waiting.append(replies)
        self.clock.advance(self.settings.initial_rebalance_delay_ms)
        generation = waiting[0][0].generation_id
        assert all(r and r[0].error is ErrorCode.none for r in waiting)
        leader = waiting[0][0].leader
        for member_id in ids:
            if member_id != leader:
                self.sync(member_id, generation, group_id=group_id)
        self.sync(leader, generation, {mid: mid.encode() for mid in ids}, group_id=group_id)
        self.log.complete()
        assert self.group(group_id).state.value == "Stable"
        ids.remove(leader)
        return [leader, *ids]


def finish(coroutine):
    """Resume a coroutine whose awaited write has completed; return its result."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine is still waiting")


def rebalance_history(coordinator: GroupCoordinator, group_id: str) -> list[RebalanceRecord]:
    """The last rebalances of a group, oldest first; none for an unknown group."""
    group = coordinator.group(group_id)
    return [] if group is None else list(group.rebalances)


# --- consumer protocol bytes (ConsumerProtocolSubscription / Assignment v0) ---------------

def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(topics: list[str]) -> bytes:
    return struct.pack(">hi", 0, len(topics)) + b"".join(map(_string, topics)) + struct.pack(">i", -1)


def assignment(partitions: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", 0, len(partitions))
    for topic, parts in partitions.items():
        out += _string(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    return out + struct.pack(">i", -1)
