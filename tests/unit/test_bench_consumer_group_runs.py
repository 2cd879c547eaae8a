"""bench/lib/consumer_groups.py's drivers (form a stable group, one more joins, time it) against a small scripted
KIP-848 coordinator in this file: revocation before reassignment, epochs bumped per join, assignments sent only
when they change or when the member reported what it owns (so the drivers' waiting, stopping and counting are
checked without a server; the real server is the integration smoke test's)."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from kio.schema.consumer_group_heartbeat.v1.response import Assignment, ConsumerGroupHeartbeatResponse, TopicPartitions
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta

from bench.lib import consumer_groups
from bench.lib.consumer_members import ConsumerMember, partitions_of

TOPIC = uuid.UUID(int=7)
INTERVAL_MS = 20


class ScriptedCoordinator:
    """One group; the target assignment deals the partitions round-robin over the members sorted by id."""

    def __init__(self, partitions: int, give_early: bool = False) -> None:
        self.partitions = [(TOPIC, p) for p in range(partitions)]
        self.epoch = 0
        self.members: dict[str, dict[str, Any]] = {}
        self.give_early = give_early  # a broken coordinator: assigns partitions their owner still holds

    def target(self, member_id: str) -> set:
        ids = sorted(self.members)
        return {p for i, p in enumerate(self.partitions) if ids[i % len(ids)] == member_id}

    def held_by_others(self, member_id: str) -> set:
        return {p for m, s in self.members.items() if m != member_id for p in s["assigned"] | s["revoking"]}

    def handle(self, request: Any) -> ConsumerGroupHeartbeatResponse:
        mid = request.member_id
        if request.member_epoch == -1:
            del self.members[mid]
            self.epoch += 1
            return self.answer(mid, -1, None)
        if request.member_epoch == 0:
            self.members[mid] = {"epoch": 0, "assigned": set(), "revoking": set()}
            self.epoch += 1
        m = self.members[mid]
        before = set(m["assigned"])
        if request.topic_partitions is not None and not (partitions_of(request.topic_partitions) & m["revoking"]):
            m["revoking"] = set()
        target = self.target(mid)
        if m["epoch"] < self.epoch and not m["revoking"]:
            gone = m["assigned"] - target
            if gone and not self.give_early:
                m["assigned"] -= gone
                m["revoking"] = gone
            else:
                m["epoch"] = self.epoch
        if m["epoch"] == self.epoch:
            free = target if self.give_early else target - self.held_by_others(mid)
            m["assigned"] = (m["assigned"] & target) | free
        changed = m["assigned"] != before or request.topic_partitions is not None or request.member_epoch == 0
        return self.answer(mid, m["epoch"], m["assigned"] if changed else None)

    def answer(self, member_id: str, epoch: int, assigned: set | None) -> ConsumerGroupHeartbeatResponse:
        assignment = None if assigned is None else Assignment(topic_partitions=(TopicPartitions(
            topic_id=TOPIC, partitions=tuple(i32(p) for _, p in sorted(assigned))),))
        return ConsumerGroupHeartbeatResponse(
            throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none, member_id=member_id,
            member_epoch=i32(epoch),
            heartbeat_interval=i32Timedelta.parse(datetime.timedelta(milliseconds=INTERVAL_MS)),
            assignment=assignment)


@pytest.fixture
def coordinator(monkeypatch: pytest.MonkeyPatch) -> ScriptedCoordinator:
    fake = ScriptedCoordinator(partitions=12)

    async def connect(self: ConsumerMember, host: str, port: int) -> None:
        pass

    async def call(self: ConsumerMember, request: Any) -> Any:
        await asyncio.sleep(0.001)
        return fake.handle(request)

    monkeypatch.setattr(ConsumerMember, "connect", connect)
    monkeypatch.setattr(ConsumerMember, "call", call)
    monkeypatch.setattr(ConsumerMember, "close", lambda self: None)
    return fake


def run_convergence(size: int) -> consumer_groups.Convergence:
    return asyncio.run(consumer_groups.convergence("h", 1, "g", size, ["t"], 12, INTERVAL_MS / 1000, 50))


def test_convergence_waits_for_revocations_and_ends_with_every_member_at_the_new_epoch(coordinator) -> None:
    result = run_convergence(4)
    assert result.epoch_after == result.epoch_before + 1 == 5
    assert result.max_double_owned == 0 and result.revoking_members >= 1
    assert result.interval_s == INTERVAL_MS / 1000 and result.seconds > 0 and result.heartbeats >= 5
    assert coordinator.members == {}  # everyone left at the end


def test_a_coordinator_that_hands_out_held_partitions_is_caught(coordinator) -> None:
    coordinator.give_early = True
    assert run_convergence(4).max_double_owned > 0


def test_forming_a_group_ends_stable_and_halting_keeps_it_so(coordinator) -> None:
    async def go() -> None:
        running, seconds = await consumer_groups.form_stable("h", 1, "g", 3, ["t"], 12, 0.02, 5)
        await running.halt()
        assert seconds > 0 and running.view.is_stable()
        assert {m.epoch for m in running.members} == {3}
        assert sorted(len(m.owned) for m in running.members) == [4, 4, 4]
        assert all(m.reported == m.owned for m in running.members)

    asyncio.run(go())


def test_a_group_that_never_settles_times_out_saying_why(coordinator) -> None:
    # the view expects 13 partitions, the coordinator has 12
    with pytest.raises(TimeoutError, match=r"not stable: \d+ of 13 partitions owned, 0 of them twice"):
        asyncio.run(consumer_groups.form_stable("h", 1, "g", 2, ["t"], 13, 0.02, 0.3))
