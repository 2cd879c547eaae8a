"""Group members for benchmarks: the requests a classic-group member sends, and AsyncMember (one member
per connection) forming a group and syncing it.

Used by bench_groups (heartbeats, rebalance time), bench_rejoin, bench/lib/fleet.py and the in-process
profiles. JoinGroup v5 (two-step) and SyncGroup v3 / Heartbeat v3 are what every peer parses.
"""

from __future__ import annotations

import asyncio
import datetime
import struct
import time
from collections.abc import Iterable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v3.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i32, i32Timedelta

from bench.lib.wire import decode_response, request_frame

SESSION_TIMEOUT_MS = 10000  # librdkafka's and kafka-python's long-standing default
SUBSCRIPTION = struct.pack(">hi", 0, 1) + struct.pack(">h", 5) + b"bench" + struct.pack(">i", -1)
ASSIGNMENT = struct.pack(">hii", 0, 0, -1)  # ConsumerProtocolAssignment v0: no partitions, null user data


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def join_request(group: str, member_id: str, session_timeout_ms: int = SESSION_TIMEOUT_MS,
                 rebalance_timeout_ms: int = 60000) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group, session_timeout=ms(session_timeout_ms), rebalance_timeout=ms(rebalance_timeout_ms),
        member_id=member_id, group_instance_id=None, protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION),))


def sync_request(group: str, generation: int, member_id: str, assignees: Iterable[str] = ()) -> SyncGroupRequest:
    """SyncGroup v3; the leader passes every member's id in `assignees` (each gets ASSIGNMENT)."""
    return SyncGroupRequest(group_id=group, generation_id=i32(generation), member_id=member_id,
                            group_instance_id=None, assignments=tuple(
                                SyncGroupRequestAssignment(member_id=m, assignment=ASSIGNMENT) for m in assignees))


def heartbeat_request(group: str, generation: int, member_id: str) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, generation_id=i32(generation), member_id=member_id,
                            group_instance_id=None)


class AsyncMember:
    """One member on its own connection: JoinGroup v5 (two-step), SyncGroup v3."""

    def __init__(self, group: str, index: int, session_timeout_ms: int = SESSION_TIMEOUT_MS) -> None:
        self.group, self.index, self.session_timeout_ms = group, index, session_timeout_ms
        self.member_id = ""
        self.generation = -1
        self.members: tuple = ()
        self.leader = ""
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.correlation = 0

    async def connect(self, host: str, port: int) -> None:
        self.reader, self.writer = await asyncio.open_connection(host, port)

    async def call(self, request: Any, sent: asyncio.Event | None = None) -> Any:
        assert self.reader is not None and self.writer is not None
        self.correlation += 1
        self.writer.write(request_frame(request, self.correlation, client_id=f"bench-{self.index}"))
        if sent is not None:
            await self.writer.drain()
            sent.set()
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        body = await self.reader.readexactly(size)
        if isinstance(request, SyncGroupRequest):
            # SyncGroup v3: correlation id, throttle, error code. librdkafka's mock sends a null
            # assignment with errors, which the schema (and kio) does not allow: read the code first.
            (code,) = struct.unpack_from(">h", body, 8)
            if code:
                return ErrorCode(code)
        return decode_response(type(request), body)

    async def join(self, newer_than: int = -1) -> None:
        """Join; with `newer_than`, keep going until a generation above it (as a real client would:
        a follower whose JoinGroup reaches a still-Stable group is told the current generation,
        heartbeats until REBALANCE_IN_PROGRESS and rejoins)."""
        while True:
            response = await self.call(join_request(self.group, self.member_id, self.session_timeout_ms))
            if response.error_code is ErrorCode.member_id_required:
                self.member_id = response.member_id
                continue
            if response.error_code is not ErrorCode.none:
                raise RuntimeError(f"JoinGroup: {response.error_code.name}")
            if response.generation_id <= newer_than:
                while await self.heartbeat(response.generation_id) is ErrorCode.none:
                    pass
                continue
            self.member_id, self.generation = response.member_id, response.generation_id
            self.members, self.leader = response.members, response.leader
            return

    async def heartbeat(self, generation: int) -> ErrorCode:
        response = await self.call(heartbeat_request(self.group, generation, self.member_id))
        return response.error_code

    async def sync(self, sent: asyncio.Event | None = None) -> None:
        """SyncGroup; a REBALANCE_IN_PROGRESS answer sends the member back to JoinGroup, as clients do.
        `sent` is set once the first SyncGroup is on the wire."""
        while await self._sync_once(sent) is ErrorCode.rebalance_in_progress:
            sent = None
            await self.join(newer_than=self.generation)

    async def _sync_once(self, sent: asyncio.Event | None = None) -> ErrorCode:
        assignees = [m.member_id for m in self.members] if self.member_id == self.leader else []
        response = await self.call(sync_request(self.group, self.generation, self.member_id, assignees), sent)
        code = response if isinstance(response, ErrorCode) else response.error_code
        if code not in (ErrorCode.none, ErrorCode.rebalance_in_progress):
            role = "leader" if self.member_id == self.leader else "follower"
            raise RuntimeError(f"SyncGroup of member {self.index} ({role}): {code.name}")
        return code

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def heartbeat_group(host: str, port: int, size: int, session_timeout_ms: int) -> list[bytes]:
    """A Stable group of `size` members; Heartbeat frames for all of them."""
    members = await form_group(host, port, "bench-heartbeats", size, session_timeout_ms)
    for m in members:
        m.close()
    return heartbeat_frames(members)


async def form_group(host: str, port: int, group: str, size: int,
                     session_timeout_ms: int = SESSION_TIMEOUT_MS) -> list[AsyncMember]:
    members = [AsyncMember(group, i, session_timeout_ms) for i in range(size)]
    await asyncio.gather(*(m.connect(host, port) for m in members))
    await asyncio.gather(*(m.join() for m in members))
    generations = {m.generation for m in members}
    if len(generations) != 1:
        raise RuntimeError(f"members ended in generations {sorted(generations)}")
    await sync_all(members)
    return members


FOLLOWER_HEAD_START = 0.05  # s between the followers' SyncGroups and the leader's; not timed


async def sync_all(members: list[AsyncMember]) -> float:
    """Followers' SyncGroups first, then the leader's, as real groups do (the leader computes the
    assignment first). librdkafka's mock needs this order: it completes the sync as soon as the
    leader's assignments arrive and answers followers that come later INVALID_REQUEST. Returns the
    seconds from the leader's SyncGroup to the last answer (the head start is not counted)."""
    leader = next((m for m in members if m.member_id == m.leader), None)
    followers = [m for m in members if m is not leader]
    sent = [asyncio.Event() for _ in followers]
    tasks = [asyncio.ensure_future(m.sync(event)) for m, event in zip(followers, sent)]
    try:
        await asyncio.gather(*(event.wait() for event in sent))
        await asyncio.sleep(FOLLOWER_HEAD_START)
        started = time.perf_counter()
        if leader is not None:
            await leader.sync()
        await asyncio.gather(*tasks)
        return time.perf_counter() - started
    finally:
        for task in tasks:
            task.cancel()


def heartbeat_check(body: bytes) -> None:
    """Heartbeat v3 answers with header v0: correlation id, throttle time, error code."""
    (code,) = struct.unpack_from(">h", body, 8)
    if code != 0:
        raise ValueError(f"Heartbeat answered error code {code}")


def heartbeat_frames(members: list[AsyncMember]) -> list[bytes]:
    return [request_frame(heartbeat_request(m.group, m.generation, m.member_id), correlation_id=i + 1)
            for i, m in enumerate(members)]


