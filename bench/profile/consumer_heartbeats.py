"""Server CPU per steady ConsumerGroupHeartbeat (KIP-848) against per classic Heartbeat, in-process.

    .venv/bin/python -m bench.profile.consumer_heartbeats [--members 100] [--partitions 1000] [--rounds 200]
                                                          [--reps 3] [--no-profile]

The real dispatcher over a MemoryLog (bench/lib/inprocess.py's DispatcherRig): a classic group of `members`
(JoinGroup v5 / SyncGroup v3) and a consumer group of `members` simulated members (bench/lib/consumer_members.py,
driven until stable over `partitions` partitions), then the frames bench_consumer_groups sends on the wire (Heartbeat
v3; steady ConsumerGroupHeartbeat v1: member id and epoch, optional fields null) through `dispatch`, `rounds` times
every member, classic and consumer alternating (A B A B) for `reps`. Prints µs of process CPU per heartbeat for
each, and a cProfile of the consumer heartbeats (the top own-time functions) unless --no-profile.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time
from typing import Any

from bench.lib.consumer_members import ConsumerMember, GroupView, steady_frames
from bench.lib.inprocess import DispatcherRig, known_topics, server_gc_settings
from bench.lib.members import heartbeat_frames, join_request, sync_request
from bench.lib.wire import decode_response, request_frame
from coordinator.log_setup import configure_logging


async def classic_frames(rig: DispatcherRig, size: int) -> list[bytes]:
    """A stable classic group (two-step joins, no initial delay, the leader syncs everyone); its Heartbeat frames."""
    ids = [(await rig.call(join_request("classic", ""))).member_id for _ in range(size)]
    sent = rig.send([request_frame(join_request("classic", m))[4:] for m in ids])
    rig.clock.advance(0)
    joined = [decode_response(type(join_request("classic", "")), a[4:]) for a in await rig.answers(sent)]
    leader, generation = joined[0].leader, joined[0].generation_id
    sent = rig.send([request_frame(sync_request("classic", generation, m, ids if m == leader else ()))[4:]
                     for m in ids])
    rig.log.complete()
    await rig.answers(sent)
    members: Any = [type("M", (), {"group": "classic", "generation": generation, "member_id": m}) for m in ids]
    return [f[4:] for f in heartbeat_frames(members)]


async def consumer_frames(rig: DispatcherRig, size: int, partitions: int) -> list[bytes]:
    """`size` members heartbeat (each answer's writes completed at once) until the group is stable."""
    known_topics(rig.services.topics, {"profile-cg": partitions})
    members = [ConsumerMember("consumer", i, ["profile-cg"]) for i in range(size)]
    view = GroupView(members, partitions)

    async def call(request: Any) -> Any:
        (answer,) = rig.send([request_frame(request)[4:]])
        rig.log.complete()
        (frame,) = await rig.answers([answer])
        return decode_response(type(request), frame[4:])

    for m in members:
        m.call = call  # type: ignore[method-assign]
    for _ in range(50):
        for m in members:
            await m.heartbeat()
            while m.must_ack:
                await m.heartbeat()
        if view.is_stable():
            return [f[4:] for f in steady_frames(members)]
    raise RuntimeError("the consumer group did not become stable: " + "; ".join(view.unstable()))


def cpu_per_beat(rig: DispatcherRig, frames: list[bytes], rounds: int) -> float:
    dispatch = rig.dispatcher.dispatch
    started = time.process_time()
    for _ in range(rounds):
        for frame in frames:
            dispatch(frame, "127.0.0.1", 1)
    return (time.process_time() - started) / (rounds * len(frames)) * 1e6


async def main_async(args: argparse.Namespace) -> None:
    rig = DispatcherRig()
    classic = await classic_frames(rig, args.members)
    consumer = await consumer_frames(rig, args.members, args.partitions)
    server_gc_settings()
    for rep in range(args.reps):
        a, b = cpu_per_beat(rig, classic, args.rounds), cpu_per_beat(rig, consumer, args.rounds)
        print(f"rep {rep + 1}: classic Heartbeat {a:.1f} µs, steady ConsumerGroupHeartbeat {b:.1f} µs of CPU "
              f"each ({b / a:.1f}x)", flush=True)
    if not args.no_profile:
        profile = cProfile.Profile()
        profile.runcall(cpu_per_beat, rig, consumer, args.rounds)
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile.consumer_heartbeats", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
