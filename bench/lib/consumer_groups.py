"""Running KIP-848 consumer groups of simulated members (bench/lib/consumer_members.py) for a benchmark:
`RunningGroup` heartbeats every member on its own task until stopped; `form_stable` and `convergence` are
the two things bench_consumer_groups measures with it; `verify_steady` checks a stable group's steady answers.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from bench.lib.consumer_members import ConsumerMember, GroupView, leave_request, steady_request
from bench.lib.wire import WireClient


class RunningGroup:
    """Members of one group, each heartbeating on its own connection and task (`ConsumerMember.run`)."""

    def __init__(self, host: str, port: int, group: str, topics: list[str], partitions: int) -> None:
        self.host, self.port, self.group, self.topics = host, port, group, topics
        self.members: list[ConsumerMember] = []
        self.view = GroupView(self.members, partitions)
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task] = []

    async def add(self, delay: float = 0.0) -> ConsumerMember:
        """Connect one more member; it joins after `delay` seconds and heartbeats from then on."""
        member = ConsumerMember(self.group, len(self.members), self.topics)
        await member.connect(self.host, self.port)
        self.members.append(member)

        async def run() -> None:
            if delay:
                await asyncio.sleep(delay)
            await member.run(self.view.observe, self.stop)

        self.tasks.append(asyncio.ensure_future(run()))
        return member

    async def wait_stable(self, limit_s: float) -> float:
        """Until `view` says stable (its perf_counter time is returned); a member's failure is raised, and
        TimeoutError names the members that are not stable."""
        waiter = asyncio.ensure_future(self.view.stable.wait())
        try:
            await asyncio.wait([waiter, *self.tasks], timeout=limit_s, return_when=asyncio.FIRST_COMPLETED)
            for task in self.tasks:
                if task.done() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
            if self.view.stable_at is None:
                raise TimeoutError(f"{self.group} not stable after {limit_s:.0f} s; not stable: "
                                   + "; ".join(self.view.unstable()))
            return self.view.stable_at
        finally:
            waiter.cancel()

    async def halt(self, leave: bool = False) -> None:
        """Stop heartbeating (each member finishes the request it has in flight); with `leave`, every
        member leaves the group (epoch -1) as a closing client does. Connections are closed."""
        self.stop.set()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        try:
            if leave:
                await asyncio.gather(*(m.leave() for m in self.members))
        finally:
            for m in self.members:
                m.close()


async def form_stable(host: str, port: int, group: str, size: int, topics: list[str], partitions: int,
                      spread_s: float, limit_s: float) -> tuple[RunningGroup, float]:
    """`size` members join, their first heartbeats spread evenly over `spread_s` (members of a real group
    heartbeat at unrelated moments), and heartbeat until the group is stable. Returns the running group
    and the seconds from the first join to stable."""
    running = RunningGroup(host, port, group, topics, partitions)
    started = time.perf_counter()
    for i in range(size):
        await running.add(delay=spread_s * i / size)
    try:
        return running, await running.wait_stable(limit_s) - started
    except BaseException:
        await running.halt()
        raise


@dataclass
class Convergence:
    seconds: float  # from the newcomer's join to every member stable at the new epoch
    interval_s: float  # the heartbeat interval the server gave the members
    formation_s: float  # the first `size` members, from their first join to stable (not part of `seconds`)
    epoch_before: int
    epoch_after: int
    revoking_members: int  # members that gave partitions up for the newcomer
    heartbeats: int  # heartbeats all members sent from the join to stable
    max_double_owned: int  # most partitions owned by two members at once, from formation to the end

    @property
    def intervals(self) -> float:
        return self.seconds / self.interval_s


async def convergence(host: str, port: int, group: str, size: int, topics: list[str], partitions: int,
                      interval_s: float, limit_intervals: float) -> Convergence:
    """`size` members stable; one more joins; the time until every member is stable at the new epoch."""
    running, formation_s = await form_stable(host, port, group, size, topics, partitions, interval_s,
                                             limit_intervals * interval_s)
    try:
        old = running.members[:]
        epoch_before = old[0].epoch
        revocations = [m.revocations for m in old]
        sent = sum(m.sent for m in old)
        running.view.expect_epoch_above(epoch_before)
        started = time.perf_counter()
        newcomer = await running.add()
        stable_at = await running.wait_stable(limit_intervals * interval_s)
        return Convergence(
            seconds=stable_at - started, interval_s=newcomer.interval_s, formation_s=formation_s,
            epoch_before=epoch_before, epoch_after=newcomer.epoch,
            revoking_members=sum(1 for m, before in zip(old, revocations) if m.revocations > before),
            heartbeats=sum(m.sent for m in running.members) - sent,
            max_double_owned=running.view.max_double_owned)
    finally:
        await running.halt(leave=True)


def verify_steady(host: str, port: int, members: list[ConsumerMember]) -> list[str]:
    """One steady heartbeat per member (what the load generator sends): what differs from a steady answer
    (an error, a moved epoch, an assignment Kafka would not send: it sends one only when the assignment
    changed, the request reported owned partitions, or the member joined)."""
    problems = []
    with WireClient(host, port) as client:
        for m in members:
            answer = client.call(steady_request(m.group, m.member_id, m.epoch))
            if answer.error_code is not ErrorCode.none:
                problems.append(f"member {m.index}: steady heartbeat answered {answer.error_code.name}")
            elif int(answer.member_epoch) != m.epoch:
                problems.append(f"member {m.index}: steady heartbeat moved epoch {m.epoch} -> {answer.member_epoch}")
            elif answer.assignment is not None:
                problems.append(f"member {m.index}: steady heartbeat answered with an assignment")
    return problems


def leave_all(host: str, port: int, members: list[ConsumerMember]) -> list[str]:
    """Every member leaves (epoch -1), so that the group does not expire member by member later in the run."""
    problems = []
    with WireClient(host, port) as client:
        for m in members:
            answer = client.call(leave_request(m.group, m.member_id))
            if answer.error_code is not ErrorCode.none:
                problems.append(f"member {m.index}: leaving answered {answer.error_code.name}")
    return problems
