"""Many group members on a few connections: pipelined JoinGroup/SyncGroup, then timed heartbeats.

A member of a classic group is not tied to a connection, so 100,000 members fit on a few thousand
sockets. Member m of group g uses connection (g * size + m) % connections, so the groups of one "wave"
(connections // size groups) have one member per connection. Servers that answer concurrently get
every wave at once; servers that answer one request per connection at a time stall when queued
JoinGroups of several groups share a connection (noida-db: 45 s instead of 1 s for two waves), so they
can be seated one wave after another (`waves=True`). Heartbeats are answered at once by every server
and share the connections freely. Frames are pre-encoded; answers are matched to requests by order.

    fleet = await Fleet.join(host, port, groups=10_000, size=10, ...)   # all members Stable
    stats = await fleet.heartbeat(interval=3.0, seconds=30, report=...)   # open-loop, evenly spread
"""

from __future__ import annotations

import asyncio
import gc
import os
import select
import socket
import struct
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.join_group.v5.request import JoinGroupRequest
from kio.schema.leave_group.v1.request import LeaveGroupRequest

from bench.lib.members import heartbeat_request, join_request, sync_request
from bench.lib.wire import decode_response, request_frame

_SIZE = struct.Struct(">i")
# Kernel receive timestamps (Linux): SO_TIMESTAMPNS puts the time an answer reached the socket in a
# struct timespec (CLOCK_REALTIME) next to the bytes recvmsg returns (for TCP, that of the last segment read).
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("@qq")
_TIMESTAMP_SPACE = socket.CMSG_SPACE(_TIMESPEC.size)
_READ_SIZE = 256 * 1024
_CODE_AT_8 = struct.Struct(">h")  # v0-header answers with a throttle time: corr, throttle, error code
MEMBER_ID_REQUIRED = ErrorCode.member_id_required.value


class Pipe(asyncio.Protocol):
    """One connection. `send(frames)` returns one future per frame, resolved in order with the
    response body (correlation id first); `send_timed(frames)` counts answers in `on_timed` instead.

    Times are `time.time_ns()` (CLOCK_REALTIME, the kernel's receive-timestamp clock). After
    `tap(poller)` the socket is read through a duplicate with kernel receive timestamps, registered
    in `poller` (an epoll the caller drains with `read_tapped`), so `on_timed` learns when each
    answer reached the socket as well as when this process got round to reading it: a busy load
    generator delays the second, never the first."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiting: deque[Any] = deque()  # a Future, or the time_ns a timed frame left at
        # (sent ns, arrived at the socket ns, read ns, body); arrived == read when not tapped
        self.on_timed: Callable[[int, int, int, bytes], None] | None = None
        self.lost: asyncio.Future = asyncio.get_running_loop().create_future()
        self._tap: socket.socket | None = None
        self._poller: Any = None

    @classmethod
    async def open(cls, host: str, port: int) -> Pipe:
        _transport, pipe = await asyncio.get_running_loop().create_connection(cls, host, port)
        return pipe

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, frames: Sequence[bytes]) -> list[asyncio.Future]:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in frames]
        self.waiting.extend(futures)
        self.transport.write(b"".join(frames))  # type: ignore[union-attr]
        return futures

    def send_timed(self, frames: Sequence[bytes]) -> None:
        now = time.time_ns()
        self.waiting.extend([now] * len(frames))
        self.transport.write(b"".join(frames))  # type: ignore[union-attr]

    def tap(self, poller: Any) -> int | None:
        """Read through a duplicate of the socket with SO_TIMESTAMPNS, registered for reading in
        `poller` (a select.epoll), instead of the transport. Returns the duplicate's fd."""
        if self._tap is not None or self.transport is None or self.lost.done():
            return None
        fd = os.dup(self.transport.get_extra_info("socket").fileno())
        sock = socket.socket(fileno=fd)
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.transport.pause_reading()
        self._tap, self._poller = sock, poller
        poller.register(fd, select.EPOLLIN)
        return fd

    def untap(self) -> None:
        """Back to the transport (what the socket holds unread is read by it)."""
        sock, self._tap = self._tap, None
        if sock is None:
            return
        self._poller.unregister(sock.fileno())
        sock.close()
        if not self.lost.done() and self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def read_tapped(self) -> None:
        """One read of the tapped socket (the poller said it is readable)."""
        if self._tap is None:  # lost (and untapped) earlier in the same batch of events
            return
        try:
            data, ancillary, _flags, _address = self._tap.recvmsg(_READ_SIZE, _TIMESTAMP_SPACE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        if not data:
            self._lose(ConnectionError("server closed the connection"))
            return
        arrived = 0
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanoseconds = _TIMESPEC.unpack_from(payload)
                arrived = seconds * 1_000_000_000 + nanoseconds
        self._received(data, arrived)

    def data_received(self, data: bytes) -> None:
        self._received(data, 0)

    def _received(self, data: bytes, arrived: int) -> None:
        buf = self.buf
        buf += data
        pos, end = 0, len(buf)
        now = time.time_ns()
        arrived = arrived or now
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if end - pos - 4 < size:
                break
            body = bytes(buf[pos + 4:pos + 4 + size])
            pos += 4 + size
            if not self.waiting:
                self._lose(ConnectionError("an answer nobody asked for"))
                return
            item = self.waiting.popleft()
            if isinstance(item, int):
                self.on_timed(item, arrived, now, body)  # type: ignore[misc]
            elif not item.done():
                item.set_result(body)
        del buf[:pos]

    def connection_lost(self, exc: Exception | None) -> None:
        self._lose(exc or ConnectionError("server closed the connection"))

    def _lose(self, exc: BaseException) -> None:
        self.untap()
        for item in self.waiting:
            if not isinstance(item, int) and not item.done():
                item.set_exception(exc)
        self.waiting.clear()
        if not self.lost.done():
            self.lost.set_result(exc)
        if self.transport is not None:
            self.transport.close()


@dataclass
class Member:
    group: str
    pipe: Pipe
    member_id: str = ""
    generation: int = -1
    leader: str = ""
    peers: tuple = ()


def _join_frame(m: Member, session_timeout_ms: int) -> bytes:
    return request_frame(join_request(m.group, m.member_id, session_timeout_ms))


def _sync_frame(m: Member) -> bytes:
    assignees = [p.member_id for p in m.peers] if m.member_id == m.leader else []
    return request_frame(sync_request(m.group, m.generation, m.member_id, assignees))


async def _exchange(members: Sequence[Member], frame_for: Callable[[Member], bytes]) -> list[bytes]:
    """Send one frame per member (grouped per connection, one write each) and wait for every answer."""
    by_pipe: dict[Pipe, list[int]] = {}
    for i, m in enumerate(members):
        by_pipe.setdefault(m.pipe, []).append(i)
    answers: list[Any] = [None] * len(members)
    for pipe, indexes in by_pipe.items():
        for i, future in zip(indexes, pipe.send([frame_for(members[i]) for i in indexes])):
            answers[i] = future
    return list(await asyncio.gather(*answers))


async def _join(m: Member, session_timeout_ms: int) -> Any:
    """JoinGroup until answered without MEMBER_ID_REQUIRED (the first join of a v4+ member only fetches
    its member id); the answer's fields are copied to `m`. RuntimeError names any other error."""
    for _attempt in range(2):
        (future,) = m.pipe.send([_join_frame(m, session_timeout_ms)])
        response = decode_response(JoinGroupRequest, await future)
        if response.error_code.value == MEMBER_ID_REQUIRED:
            m.member_id = response.member_id
            continue
        if response.error_code is not ErrorCode.none:
            raise RuntimeError(f"JoinGroup of {m.group}: {response.error_code.name}")
        m.member_id, m.generation = response.member_id, response.generation_id
        m.leader, m.peers = response.leader, response.members
        return response
    raise RuntimeError(f"{m.group}: a member was asked for a member id twice")


async def _seat_group(group: list[Member], session_timeout_ms: int) -> None:
    """Join every member of one group into one generation.

    The server ends a new group's first rebalance when its initial delay has passed, so members whose
    joins arrive after that (other connections, a busy machine, or a delay of 0) find a generation that
    was completed without them: its leader is answered with fewer members than the group has. Those
    members join again, as a real consumer would when its heartbeat says REBALANCE_IN_PROGRESS, and the
    next generation waits for all of them."""
    running = {asyncio.ensure_future(_join(m, session_timeout_ms)): m for m in group}
    answered: dict[int, Any] = {}  # id(member) -> its JoinGroup answer
    cut_short: set[int] = set()  # generations whose leader was answered with fewer members than the group
    by_id = {id(m): m for m in group}
    try:
        while running:
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                answered[id(running.pop(task))] = task.result()
            cut_short.update(r.generation_id for r in answered.values()
                             if r.leader == r.member_id and len(r.members) < len(group))
            # a follower's answer may come after its leader's: the generation, not the leader's answer,
            # is remembered, or that follower would wait in a generation the group has left
            for key, answer in list(answered.items()):
                if answer.generation_id in cut_short:
                    del answered[key]
                    running[asyncio.ensure_future(_join(by_id[key], session_timeout_ms))] = by_id[key]
    finally:
        for task in running:
            task.cancel()
    generations = {m.generation for m in group}
    leaders = [m for m in group if m.member_id == m.leader]
    if len(generations) != 1 or len(leaders) != 1 or len(leaders[0].peers) != len(group):
        raise RuntimeError(f"{group[0].group}: generations {sorted(generations)}, {len(leaders)} leaders")


async def _seat(members: list[Member], session_timeout_ms: int) -> None:
    groups: dict[str, list[Member]] = {}
    for m in members:
        groups.setdefault(m.group, []).append(m)
    await asyncio.gather(*(_seat_group(group, session_timeout_ms) for group in groups.values()))
    leaders = [m for m in members if m.member_id == m.leader]
    followers = [m for m in members if m.member_id != m.leader]
    follower_answers = asyncio.ensure_future(_exchange(followers, _sync_frame))
    await asyncio.sleep(0.2)  # followers first: librdkafka's mock needs the leader's assignment last
    for body in [*await _exchange(leaders, _sync_frame), *await follower_answers]:
        (code,) = _CODE_AT_8.unpack_from(body, 4)
        if code:
            raise RuntimeError(f"SyncGroup answered {ErrorCode(code).name}")


def _read_ready(poller: Any, tapped: dict[int, Pipe], until: float) -> None:
    """Read the tapped sockets that are readable, until none is or `until` (perf_counter) passed.
    Level-triggered: a socket left unread is reported again at the next call. 16 sockets per poll
    (~0.3 ms of reads) bound how far past `until` it runs; with 256 a tick started 5-7 ms late at p99."""
    while True:
        events = poller.poll(0, 16)
        if not events:
            return
        for fd, _mask in events:
            pipe = tapped.get(fd)
            if pipe is not None:
                pipe.read_tapped()
        if time.perf_counter() >= until:
            return


class Fleet:
    def __init__(self, pipes: list[Pipe], members: list[Member]) -> None:
        self.pipes, self.members = pipes, members

    @classmethod
    async def join(cls, host: str, port: int, groups: int, size: int, connections: int = 1000,
                   session_timeout_ms: int = 45000, prefix: str = "fleet", waves: bool = False) -> Fleet:
        """Every member joins (two-step JoinGroup v5) and syncs (followers first, then each group's
        leader with an assignment for all). All groups at once; with `waves`, connections // size
        groups at a time, each wave seated before the next is sent (for servers that stall when a
        connection carries queued JoinGroups of several groups). RuntimeError names the first error."""
        pipes = [await Pipe.open(host, port) for _ in range(min(connections, groups * size))]
        members = [Member(f"{prefix}-{g}", pipes[(g * size + i) % len(pipes)])
                   for g in range(groups) for i in range(size)]
        step = max(size, len(pipes) // size * size) if waves else len(members)
        for start in range(0, len(members), step):
            await _seat(members[start:start + step], session_timeout_ms)
        return cls(pipes, members)

    def _tap(self, on_timed: Callable[[int, int, int, bytes], None],
             lose: Callable[[asyncio.Future], None]) -> tuple[Any, dict[int, Pipe]]:
        """Every pipe reports its timed answers to `on_timed` and its loss to `lose`; on Linux, it is read
        through a tap (kernel receive timestamps) in one epoll. Returns (the epoll or None, fd -> pipe)."""
        poller = select.epoll() if sys.platform == "linux" else None
        tapped: dict[int, Pipe] = {}
        for pipe in self.pipes:
            pipe.on_timed = on_timed
            pipe.lost.add_done_callback(lose)
            fd = pipe.tap(poller) if poller is not None else None
            if fd is not None:
                tapped[fd] = pipe
        return poller, tapped

    async def heartbeat(self, interval: float, seconds: float, warmup: float,
                        report: Callable[[str], None], drain: float = 2.0, tick: float = 0.001) -> dict[str, Any]:
        """Each member sends Heartbeat v3 every `interval` s, members spread evenly over it (open loop:
        a slow server does not slow the senders). Answers to heartbeats sent in the timed window are
        counted; whatever has not come back `drain` s after the window is unanswered.

        Two latencies per answer, both from the write of the request: to the answer's arrival at the
        socket (kernel receive timestamp, `arrived_ns`) and to the moment this process read it
        (`latencies_ns`). The second also holds the generator's own delays: `loop_late_s` says how
        late each 1 ms sending tick started in the window.

        Sending comes first: each tick sends what fell due, then reads answers (from one epoll over
        the tapped sockets) only until the next tick is due. Left to the event loop, one iteration
        read every readable socket before the tick could run, and a generator near its core's limit
        (~0.8 here, most of it the kernel's loopback work) sent 20-40 ms of heartbeats at once,
        which then queued at the server. Reading late moves only the "as read" latency."""
        frames = [request_frame(heartbeat_request(m.group, m.generation, m.member_id)) for m in self.members]
        latencies: list[int] = []
        arrivals: list[int] = []
        codes: Counter[int] = Counter()
        window = {"on": False, "sent": 0, "from_ns": 1 << 62, "to_ns": 1 << 62}

        def on_timed(sent_ns: int, arrived_ns: int, read_ns: int, body: bytes) -> None:
            if window["from_ns"] <= sent_ns < window["to_ns"]:
                latencies.append(read_ns - sent_ns)
                arrivals.append(arrived_ns - sent_ns)
                codes[_CODE_AT_8.unpack_from(body, 4)[0]] += 1

        broken: asyncio.Future = asyncio.get_running_loop().create_future()  # the first connection lost

        def lose(lost: asyncio.Future) -> None:
            if not broken.done():
                broken.set_result(lost.result())

        poller, tapped = self._tap(on_timed, lose)
        n = len(self.members)
        # No cyclic GC while timing: with 100,000 members' objects a full collection of this process
        # took 130-160 ms, and the heartbeats that fell due meanwhile left in one burst that queued
        # behind each other at the server (p99 at the socket 20-50 ms in such a repetition).
        gc.collect()
        gc.freeze()
        gc.disable()
        started = time.perf_counter()
        timed_from, timed_to = started + warmup, started + warmup + seconds
        done = 0  # heartbeats sent so far (member done % n is next)
        cpu0 = 0.0
        lateness: list[float] = []  # per tick in the window: how much later than planned it started
        next_tick = started
        try:
            while True:
                now = time.perf_counter()
                if window["on"]:
                    lateness.append(max(0.0, now - next_tick))
                elif now >= timed_from:
                    window["on"], window["from_ns"] = True, time.time_ns()
                    report("start")
                    cpu0 = time.process_time()
                if now >= timed_to:
                    break
                due = int((now - started) / interval * n)
                batches: dict[Pipe, list[bytes]] = {}
                for k in range(done, due):
                    i = k % n
                    batches.setdefault(self.members[i].pipe, []).append(frames[i])
                if window["on"]:
                    window["sent"] += due - done
                done = due
                for pipe, batch in batches.items():
                    pipe.send_timed(batch)
                if broken.done():  # not a scan of every pipe per tick: that was ~1/4 of the generator's core
                    lost = sum(1 for p in self.pipes if p.lost.done())
                    raise RuntimeError(f"server closed {lost} connections: {broken.result()!r}")
                next_tick = now + tick
                if poller is not None:
                    _read_ready(poller, tapped, next_tick)
                await asyncio.sleep(max(0.0, next_tick - time.perf_counter()))
            window["to_ns"] = time.time_ns()
            client_cpu = (time.process_time() - cpu0) / seconds
            report("stop")
            answered_by = time.perf_counter() + drain
            while sum(codes.values()) < window["sent"] and time.perf_counter() < answered_by:
                if poller is not None:
                    _read_ready(poller, tapped, time.perf_counter() + 0.02)
                await asyncio.sleep(0.001 if poller is not None else 0.02)
            window["to_ns"] = 0  # later answers are not counted
        finally:
            gc.enable()
            gc.unfreeze()
            for pipe in self.pipes:
                pipe.untap()
            if poller is not None:
                poller.close()
        return {"sent": window["sent"], "answered": sum(codes.values()), "errors": {ErrorCode(c).name: k for c, k
                                                                               in codes.items() if c},
                "latencies_ns": sorted(latencies), "arrived_ns": sorted(arrivals), "seconds": seconds,
                "client_cpu": client_cpu, "loop_late_s": sorted(lateness)}

    async def leave(self) -> None:
        """LeaveGroup v1 for every member, so a later run does not share the server with expiring ones."""
        await _exchange(self.members,
                        lambda m: request_frame(LeaveGroupRequest(group_id=m.group, member_id=m.member_id)))

    def close(self) -> None:
        for pipe in self.pipes:
            if pipe.transport is not None:
                pipe.transport.close()
