"""What the request metrics cost the hottest path: pipelined heartbeats with metrics on and off, A B A B.

    .venv/bin/python -m bench.profile.metrics_cost [--groups 100] [--members 10] [--rounds 400] [--pipeline 32]

One process, one App with http.listener on (so a RequestMetrics exists), N groups formed as in
bench.profile.heartbeats, every member's Heartbeat fed through a real Connection over a fake transport,
`pipeline` frames per read. Rounds alternate between the connection counting (its `metrics` set) and
not (None, as without http.listener), so both modes see the same CPU frequency and the same machine
load; the figure is process CPU per heartbeat in each mode, and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time

import uvloop

from bench.lib.inprocess import InProcessClient, server_gc_settings
from bench.lib.members import heartbeat_request
from bench.lib.wire import request_frame
from bench.profile.heartbeats import feeder, form_group
from coordinator.app import App
from coordinator.config import Config
from coordinator.log_setup import configure_logging


async def scenario(args: argparse.Namespace) -> tuple[float, float, int]:
    server_gc_settings()
    with tempfile.TemporaryDirectory(prefix="profile-metrics-") as data:
        config = Config.load(overrides={"log.dirs": data, "listeners": "PLAINTEXT://127.0.0.1:0",
                                        "http.listener": "http://127.0.0.1:0",
                                        "group.initial.rebalance.delay.ms": "0"}, environ={})
        app = App(config)
        await app.start()
        try:
            await app.offsets.loading
            broker = InProcessClient(app.dispatcher)
            frames: list[bytes] = []
            for g in range(args.groups):
                group = f"metrics-{g}"
                for member, generation in await form_group(broker, group, args.members):
                    frames.append(request_frame(heartbeat_request(group, generation, member), len(frames)))
            send_all, connection = feeder(app, frames, args.pipeline)
            assert connection is not None
            counting = app.services.metrics
            cpu = {True: 0.0, False: 0.0}
            gc.collect()
            for round_ in range(args.rounds):
                on = round_ % 4 in (0, 3)  # A B B A: neither mode always goes first
                connection.metrics = counting if on else None
                started = time.process_time()
                await send_all()
                cpu[on] += time.process_time() - started
                await asyncio.sleep(0)
            connection.connection_lost(None)
        finally:
            await app.stop()
    per_mode = args.rounds // 2 * len(frames)
    return cpu[False] / per_mode, cpu[True] / per_mode, per_mode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--pipeline", type=int, default=32)
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    off, on, beats = uvloop.run(scenario(args))
    print(f"{beats:,} heartbeats per mode, {args.pipeline} per read: metrics off {off * 1e6:.3f} µs CPU each "
          f"({1 / off:,.0f}/CPU s), on {on * 1e6:.3f} µs ({1 / on:,.0f}/CPU s): on/off throughput {off / on:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
