"""Where the CPU goes while 10,000 members heartbeat: timer bookkeeping must not dominate (issue 4).

    .venv/bin/python -m bench.profile.heartbeats [--groups 1000] [--members 10] [--seconds 10]
                                                 [--pipeline 32] [--no-profile] [--metrics]

In-process, no sockets, so the profile holds only server work: the real App (durable offsets logs in a
temporary log.dirs, the real dispatcher and uvloop) forms `groups` consumer groups of `members` members
through JoinGroup v5 / SyncGroup v3 request frames, then feeds Heartbeat v3 frames for every member
through the dispatcher for `seconds`, yielding to the event loop between rounds so session timers run
as they would in the server. Only the heartbeat phase is profiled (cProfile). It prints the own time
of the timer code (coordinator/runtime/timers.py and the session-expiry callbacks) against the total.

With --pipeline N the frames go through the server's Connection instead (coordinator/net/connection.py: framing,
in-order answers, one write per read) over a fake transport, N size-prefixed frames per
`data_received`, as a client with N requests in flight delivers them. --no-profile measures the rate
without cProfile's per-call overhead (heartbeats per second of process CPU time, for before/after runs).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import struct
import sys
import tempfile
import time
from collections import Counter
from typing import Any

import uvloop
from kio.schema.errors import ErrorCode

from bench.lib.inprocess import FakeTransport, InProcessClient, server_gc_settings
from bench.lib.members import heartbeat_request, join_request, sync_request
from bench.lib.peers import rss_bytes
from bench.lib.wire import request_frame
from coordinator.app import App
from coordinator.config import Config
from coordinator.log_setup import configure_logging
from coordinator.net.connection import Connection

ANSWER_BYTES = 14


def feeder(app: App, frames: list[bytes], pipeline: int):
    """A coroutine function that sends every frame once and checks that every answer has error code 0."""
    if not pipeline:
        dispatch = app.dispatcher.dispatch

        async def each_frame() -> None:
            for frame in frames:
                answer = dispatch(frame[4:], "127.0.0.1", 1)
                if struct.unpack_from(">h", answer, 12)[0]:  # size, correlation, throttle, error
                    raise RuntimeError("a heartbeat was refused: a session expired?")

        return each_frame, None
    assert app.server is not None
    connection = Connection(app.server)
    transport = FakeTransport()
    connection.connection_made(transport)  # type: ignore[arg-type]
    chunks = [b"".join(frames[i:i + pipeline]) for i in range(0, len(frames), pipeline)]
    data_received = connection.data_received

    async def in_chunks() -> None:
        for chunk in chunks:
            data_received(chunk)
        while connection.resume_scheduled:  # a read outlasted the dispatch budget (a busy machine):
            await asyncio.sleep(0)  # the connection goes on with the frames left in a later loop turn
        # Heartbeat v3 answers: size, correlation id, throttle time, error code = 14 bytes each. Checked
        # through byte slices: a tuple per answer would be 100,000 objects for the cyclic GC per round
        answers = transport.take()
        count, rest = divmod(len(answers), ANSWER_BYTES)
        if count != len(frames) or rest or any(answers[12::ANSWER_BYTES]) or any(answers[13::ANSWER_BYTES]):
            refused = Counter(struct.unpack_from(">h", answers, at + 12)[0]
                              for at in range(0, len(answers) - ANSWER_BYTES + 1, ANSWER_BYTES))
            refused.pop(0, None)
            raise RuntimeError(f"{count} answers to {len(frames)} heartbeats; refused: {dict(refused)}")

    return in_chunks, connection


async def form_group(broker: InProcessClient, group: str, size: int) -> list[tuple[str, int]]:
    def join(member_id: str) -> Any:
        return join_request(group, member_id, SESSION_MS, rebalance_timeout_ms=30000)

    ids = []
    for _ in range(size):
        response = await broker.call(join(""))
        assert response.error_code is ErrorCode.member_id_required, response.error_code
        ids.append(response.member_id)
    joined = await asyncio.gather(*(broker.call(join(member_id)) for member_id in ids))
    generation, leader = joined[0].generation_id, joined[0].leader
    assert all(r.error_code is ErrorCode.none and r.generation_id == generation for r in joined)

    synced = await asyncio.gather(*(broker.call(sync_request(group, generation, m, ids if m == leader else ()))
                                    for m in ids))
    assert all(r.error_code is ErrorCode.none for r in synced)
    return [(member_id, generation) for member_id in ids]


SESSION_MS = 10_000
SLOW_TURN_S = 0.005  # the p99 bound
KEEP_ALIVE_SECONDS = 3.0


def keep_alive(app: App, frames: list[bytes]) -> None:
    """One heartbeat for every member formed so far, so that none expires while the rest form."""
    for frame in frames:
        app.dispatcher.dispatch(frame[4:], "127.0.0.1", 1)


class GcPauses:
    """Wall time of each cyclic-GC collection per generation (gc.callbacks), for the p99 they cause."""

    def __init__(self) -> None:
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses[info["generation"]].append(time.perf_counter() - self._started)

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)

    def summary(self) -> str:
        parts = []
        for generation, pauses in self.pauses.items():
            if pauses:
                parts.append(f"gen{generation} {len(pauses)} x, max {1000 * max(pauses):.1f} ms, "
                             f"total {1000 * sum(pauses):.0f} ms")
        return "; ".join(parts) or "none"


def own_time(stats: pstats.Stats, predicate) -> float:
    return sum(tt for (path, _line, name), (_cc, _nc, tt, _ct, _callers) in stats.stats.items()
               if predicate(path, name))


async def scenario(args: argparse.Namespace) -> None:
    server_gc_settings()
    with tempfile.TemporaryDirectory(prefix="profile-hb-") as data:
        metrics = {"http.listener": "http://127.0.0.1:0"} if args.metrics else {}
        config = Config.load(overrides={"log.dirs": data, "listeners": "PLAINTEXT://127.0.0.1:0",
                                        "group.initial.rebalance.delay.ms": "0", **metrics}, environ={})
        app = App(config)
        await app.start()
        connection: Connection | None = None
        try:
            await app.offsets.loading
            broker = InProcessClient(app.dispatcher)
            members: list[tuple[str, str, int]] = []
            frames: list[bytes] = []
            kept_alive = time.monotonic()
            for g in range(args.groups):
                formed = [(f"profile-{g}", m, gen) for m, gen in await form_group(broker, f"profile-{g}",
                                                                                   args.members)]
                members += formed
                frames += [request_frame(heartbeat_request(group, gen, member), len(frames) + i)
                           for i, (group, member, gen) in enumerate(formed)]
                if time.monotonic() - kept_alive > KEEP_ALIVE_SECONDS:  # forming 10,000 groups outlasts a session
                    keep_alive(app, frames)
                    kept_alive = time.monotonic()
            send_all, connection = feeder(app, frames, args.pipeline)
            profiler = cProfile.Profile()
            beats = 0
            longest_yield = 0.0  # the longest the loop ran timers (and anything else) between rounds
            slow_turns = 0  # loop turns over SLOW_TURN_S: each delays every answer queued behind it
            gc.collect()  # a clean start: what the forming left behind is not the steady state's cost
            full_started = time.perf_counter()
            gc.collect()  # what one full collection of the steady state costs (a pause of the server)
            full_collection = time.perf_counter() - full_started
            tracked_before = len(gc.get_objects())
            pauses = GcPauses()
            started, cpu_started = time.perf_counter(), time.process_time()
            if args.profile:
                profiler.enable()
            with pauses:
                while time.perf_counter() - started < args.seconds:
                    await send_all()
                    beats += len(frames)
                    yielded = time.perf_counter()
                    await asyncio.sleep(0)  # let due timers run, as the server's loop would between reads
                    turn = time.perf_counter() - yielded
                    longest_yield = max(longest_yield, turn)
                    slow_turns += turn > SLOW_TURN_S
            profiler.disable()
            cpu = time.process_time() - cpu_started
            elapsed = time.perf_counter() - started
        finally:
            if connection is not None:
                connection.connection_lost(None)
            await app.stop()
    path = f"Connection, {args.pipeline} frames per read" if args.pipeline else "dispatcher"
    print(f"{len(members):,} members in {args.groups:,} groups through the {path}: {beats:,} heartbeats in "
          f"{elapsed:.1f} s = {beats / elapsed:,.0f}/s, {beats / cpu:,.0f} per CPU second"
          f"{' under cProfile' if args.profile else ''}")
    print(f"GC-tracked objects (unfrozen) after forming: {tracked_before:,}, a full collection of them "
          f"{1000 * full_collection:.0f} ms; GC pauses while heartbeating: "
          f"{pauses.summary()}; longest loop turn between rounds: {1000 * longest_yield:.1f} ms, "
          f"{slow_turns} over {1000 * SLOW_TURN_S:.0f} ms; "
          f"RSS {rss_bytes([os.getpid()]) / 2**20:.0f} MiB")
    if not args.profile:
        return
    stats = pstats.Stats(profiler)
    total = stats.total_tt
    timers = own_time(stats, lambda path, name: path.endswith("timers.py") or "session" in name)
    print(f"profiled CPU {total:.2f} s; timer code (coordinator/runtime/timers.py + session callbacks) "
          f"{timers:.3f} s = {100 * timers / total:.2f} %")
    stats.sort_stats("tottime").print_stats(16)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--pipeline", type=int, default=0,
                        help="feed N frames per data_received through a Connection (0: call the dispatcher)")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="measure without cProfile")
    parser.add_argument("--metrics", action="store_true",
                        help="http.listener on: the request path counts requests, latency and errors")
    configure_logging("WARNING")
    uvloop.run(scenario(parser.parse_args(argv)))  # the server's loop
    return 0


if __name__ == "__main__":
    sys.exit(main())
