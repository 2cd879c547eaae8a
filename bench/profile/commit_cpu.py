"""Server CPU per durable OffsetCommit, in-process: the whole server path without sockets.

    .venv/bin/python -m bench.profile.commit_cpu [--rounds 200] [--connections 16] [--in-flight 32]

The real App (uvloop, its dispatcher, its offsets runtime with fsync group commit on a temp
log dir) serves Connection objects over fake transports: each round, every connection
receives `--in-flight` pre-encoded OffsetCommit v7 frames (1 topic x 10 partitions, one
group per connection, as bench/bench_offsets.py sends them) in one chunk, and the round ends
when every answer is written (each checked for error code 0). Reported: CPU per request,
the minimum and median over rounds, for the process (all threads: the loop and the flush
workers) and for the event loop's thread alone (what limits throughput). CPU time, not
wall time, so the figure moves less when the machine is busy; still, compare trees
A B A B in one session (PYTHONPATH=<snapshot>) rather than across sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import tempfile
import time

from bench.lib.commits import PARTITIONS, TOPIC, commit_check, commit_frames
from bench.lib.inprocess import FakeTransport, server_gc_settings, split_answers
from coordinator.app import App
from coordinator.config import Config
from coordinator.log_setup import configure_logging
from coordinator.net.connection import Connection


class CountingTransport(FakeTransport):
    """Counts the answer frames written; sets `all_written` when `expected` have been."""

    def __init__(self, expected: int, all_written: asyncio.Event, counter: list[int]) -> None:
        super().__init__()
        self.expected, self.all_written, self.counter = expected, all_written, counter

    def write(self, data: bytes) -> None:
        super().write(data)
        pos = 0
        while pos < len(data):
            pos += 4 + struct.unpack_from(">i", data, pos)[0]
            self.counter[0] += 1
        if self.counter[0] >= self.expected:
            self.all_written.set()


def check_answers(data: bytes) -> int:
    """The size-prefixed OffsetCommit answers in `data` each commit every partition (error code 0, else
    ValueError), so that what is measured is the commit path, not a refusal; returns how many."""
    answers = split_answers(data)
    for body in answers:
        commit_check(body)
    return len(answers)


async def measure(rounds: int, connections: int, in_flight: int) -> list[tuple[float, float]]:
    """(process CPU, event-loop thread CPU) per request, µs, of each round."""
    with tempfile.TemporaryDirectory(prefix="commit-cpu-") as work:
        config = Config.load(overrides={"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": work,
                                        "queued.max.requests": str(2 * in_flight)}, environ={})
        app = App(config)
        await app.start()
        try:
            while any(s.error is not None for s in app.offsets.coordinator.owned_shards()):
                await asyncio.sleep(0.05)  # the partitions load in the background
            assert app.server is not None
            catalog = app.services.topics  # the topic the commits name (an unknown one is refused, not written)
            await catalog.commit([catalog.reserve(TOPIC, PARTITIONS)])
            total = connections * in_flight
            all_written = asyncio.Event()
            counter = [0]
            feeds = []
            for c in range(connections):
                connection = Connection(app.server)
                transport = CountingTransport(total, all_written, counter)
                connection.connection_made(transport)  # type: ignore[arg-type]
                chunk = b"".join(commit_frames(c)[:in_flight])
                feeds.append((connection, transport, chunk))
            samples = []
            server_gc_settings()
            for round_no in range(rounds + 5):
                counter[0] = 0
                all_written.clear()
                start, loop_start = time.process_time(), time.thread_time()
                for connection, _transport, chunk in feeds:
                    connection.data_received(chunk)
                await all_written.wait()
                elapsed, loop_elapsed = time.process_time() - start, time.thread_time() - loop_start
                for _c, transport, _d in feeds:
                    check_answers(transport.take())
                if round_no >= 5:  # warm-up rounds
                    samples.append((elapsed / total * 1e6, loop_elapsed / total * 1e6))
            return samples
        finally:
            await app.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--in-flight", type=int, default=32)
    args = parser.parse_args()
    configure_logging("WARNING")
    import uvloop

    samples = uvloop.run(measure(args.rounds, args.connections, args.in_flight))
    for label, figures in (("process", [p for p, _l in samples]), ("event-loop thread", [t for _p, t in samples])):
        print(f"{label} CPU per OffsetCommit (10 partitions): min {min(figures):.1f} µs, median "
              f"{statistics.median(figures):.1f} µs over {len(figures)} rounds of "
              f"{args.connections} x {args.in_flight}")


if __name__ == "__main__":
    main()
