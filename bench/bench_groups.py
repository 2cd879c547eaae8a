"""Classic-group benchmarks: heartbeats/s of a 100-member group, and rebalance time for N members.

    .venv/bin/python -m bench.bench_groups [--servers ours,tansu,noida-db,rdkafka-mock]
                                           [--reps 3] [--seconds 4] [--sizes 10,100,500]

Servers are pinned to core 0 (bench.peers.start_server), the load generator and the member clients
run on core 1. All servers named are started together and measured in the same run.

1. Heartbeats/s: 100 members join one group (JoinGroup v5 / SyncGroup v3, what every peer parses),
   then pre-encoded Heartbeat v3 frames for all 100 members are pipelined on 16 connections with 32
   in flight each (bench.loadgen in its own pinned process); the first answer of each connection
   must carry error code 0.
2. Rebalance time for 10/100/500 members: the members join and sync once (this first generation
   includes the server's initial rebalance delay and is not timed); then the leader rejoins, which
   forces a rebalance, every member rejoins at once, the followers send SyncGroup, then the leader
   (50 ms later, not timed: librdkafka's mock needs followers first). Timed: from the leader's
   JoinGroup to the last JoinGroup answer, plus from the leader's SyncGroup to the last SyncGroup
   answer: join+sync without the initial delay.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import struct
import sys
import time
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v3.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i32, i32Timedelta

from bench.loadgen import Workload, decode_response, encode, run
from bench.peers import NAMES, PeerError, start_server

SERVER_CPU, LOAD_CPU = 0, 1
SESSION_TIMEOUT_MS = 10000  # librdkafka's and kafka-python's long-standing default
REBALANCE_LIMIT_S = 120  # a rebalance taking longer is reported as a timeout, larger sizes skipped
SUBSCRIPTION = struct.pack(">hi", 0, 1) + struct.pack(">h", 5) + b"bench" + struct.pack(">i", -1)
ASSIGNMENT = struct.pack(">hii", 0, 0, -1)  # ConsumerProtocolAssignment v0: no partitions, null user data


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


class AsyncMember:
    """One member on its own connection: JoinGroup v5 (two-step), SyncGroup v3."""

    def __init__(self, group: str, index: int) -> None:
        self.group, self.index = group, index
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
        self.writer.write(encode(request, self.correlation, client_id=f"bench-{self.index}"))
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
            response = await self.call(JoinGroupRequest(
                group_id=self.group, session_timeout=ms(SESSION_TIMEOUT_MS), rebalance_timeout=ms(60000),
                member_id=self.member_id, group_instance_id=None, protocol_type="consumer",
                protocols=(JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION),)))
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
        response = await self.call(HeartbeatRequest(group_id=self.group, generation_id=i32(generation),
                                                    member_id=self.member_id, group_instance_id=None))
        return response.error_code

    async def sync(self, sent: asyncio.Event | None = None) -> None:
        """SyncGroup; a REBALANCE_IN_PROGRESS answer sends the member back to JoinGroup, as clients do.
        `sent` is set once the first SyncGroup is on the wire."""
        while await self._sync_once(sent) is ErrorCode.rebalance_in_progress:
            sent = None
            await self.join(newer_than=self.generation)

    async def _sync_once(self, sent: asyncio.Event | None = None) -> ErrorCode:
        assignments = ()
        if self.member_id == self.leader:
            assignments = tuple(SyncGroupRequestAssignment(member_id=m.member_id, assignment=ASSIGNMENT)
                                for m in self.members)
        response = await self.call(SyncGroupRequest(
            group_id=self.group, generation_id=i32(self.generation), member_id=self.member_id,
            group_instance_id=None, assignments=assignments), sent)
        code = response if isinstance(response, ErrorCode) else response.error_code
        if code not in (ErrorCode.none, ErrorCode.rebalance_in_progress):
            raise RuntimeError(f"SyncGroup of member {self.index} ({'leader' if self.member_id == self.leader else 'follower'}): {code.name}")
        return code

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def heartbeat_group(host: str, port: int, size: int) -> list[bytes]:
    """A Stable group of `size` members (their sessions last 30 s); Heartbeat frames for all of them."""
    members = await form_group(host, port, "bench-heartbeats", size)
    for m in members:
        m.close()
    return heartbeat_frames(members)


async def form_group(host: str, port: int, group: str, size: int) -> list[AsyncMember]:
    members = [AsyncMember(group, i) for i in range(size)]
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


async def timed_rebalance(host: str, port: int, group: str, size: int) -> float:
    members = await form_group(host, port, group, size)
    try:
        leader = next(m for m in members if m.member_id == m.leader)
        started = time.perf_counter()
        # the leader's JoinGroup starts the rebalance; everyone else rejoins at the same moment
        old = leader.generation
        await asyncio.gather(*(m.join(newer_than=old) for m in members))
        joined = time.perf_counter() - started
        elapsed = joined + await sync_all(members)
        if {m.generation for m in members} != {leader.generation}:
            raise RuntimeError("members did not land in one generation")
        return elapsed
    finally:
        for m in members:
            m.close()


def heartbeat_check(body: bytes) -> None:
    """Heartbeat v3 answers with header v0: correlation id, throttle time, error code."""
    (code,) = struct.unpack_from(">h", body, 8)
    if code != 0:
        raise ValueError(f"Heartbeat answered error code {code}")


def heartbeat_frames(members: list[AsyncMember]) -> list[bytes]:
    return [encode(HeartbeatRequest(group_id=m.group, generation_id=i32(m.generation), member_id=m.member_id,
                                    group_instance_id=None), correlation_id=i + 1)
            for i, m in enumerate(members)]


def table(header: list[str], rows: list[list[Any]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_groups", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", default=",".join(NAMES))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--sizes", default="10,100,500")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    sizes = [int(s) for s in args.sizes.split(",")]
    if LOAD_CPU in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {LOAD_CPU})  # member clients share the load generator's core

    heartbeat_rows, rebalance_rows, failures = [], [], []
    with contextlib.ExitStack() as stack:
        endpoints = {}
        for name in names:
            try:
                endpoints[name] = stack.enter_context(start_server(name, cpu=SERVER_CPU))
            except PeerError as exc:
                failures.append(f"{name}: could not start: {str(exc).splitlines()[0]}")
        for name, ep in endpoints.items():
            try:
                frames = asyncio.run(heartbeat_group(ep.host, ep.port, 100))
                results = [run(ep.host, ep.port, Workload(frames, connections=16, in_flight=32,
                                                          duration=args.seconds, check=heartbeat_check),
                               cpu=LOAD_CPU, cpu_probe=ep.cpu_seconds) for _ in range(args.reps)]
                heartbeat_rows.append([name, f"{median([r.rps for r in results]):,.0f}",
                                       f"{min(r.rps for r in results):,.0f}-{max(r.rps for r in results):,.0f}",
                                       f"{median([r.p50_us for r in results]):,.0f}",
                                       f"{median([r.p99_us for r in results]):,.0f}",
                                       f"{median([r.server_cpu or 0.0 for r in results]):.2f}",
                                       f"{median([r.client_cpu for r in results]):.2f}"])
            except Exception as exc:  # noqa: BLE001 - report and go on with the other servers
                failures.append(f"{name}: heartbeat bench failed: {exc}")
            row = [name]
            for size in sizes:
                if row[-1] in ("failed", "timeout", "skipped"):
                    row.append("skipped")
                    continue
                try:
                    times = [asyncio.run(asyncio.wait_for(
                        timed_rebalance(ep.host, ep.port, f"bench-rebalance-{size}-{rep}", size),
                        REBALANCE_LIMIT_S)) for rep in range(args.reps)]
                    row.append(f"{median(times) * 1000:,.0f}")
                except asyncio.TimeoutError:
                    failures.append(f"{name}: rebalance of {size} took over {REBALANCE_LIMIT_S} s")
                    row.append("timeout")
                except Exception as exc:  # noqa: BLE001
                    failures.append(f"{name}: rebalance of {size} failed: {type(exc).__name__}: {exc}")
                    row.append("failed")
            rebalance_rows.append(row)

    print("Heartbeats/s, 100-member group, 16 connections x 32 in flight (server core 0, load core 1)")
    print(table(["server", "median hb/s", "min-max", "p50 µs", "p99 µs", "server CPU", "loadgen CPU"],
                heartbeat_rows))
    print()
    print("Rebalance (leader rejoins, all rejoin, leader assigns, all sync), median ms, no initial delay")
    print(table(["server", *[f"{s} members" for s in sizes]], rebalance_rows))
    for failure in failures:
        print("note:", failure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
