"""One request at a time (1 connection x 1 in flight): what the server costs per round trip, against the floor of
any Python server on uvloop and against the peer.

    .venv/bin/python -m bench.bench_one_at_a_time [--servers floor,ours,noida-db] [--seconds 4] [--reps 2]

Each server runs pinned to core 0 (bench/lib/peers.py); the client, a blocking WireClient (TCP_NODELAY), is pinned to
core 1 and sends the next frame only once the whole answer is read. `floor` is a uvloop Protocol that answers every
frame with 10 fixed bytes without parsing it: the least a Python server on uvloop spends per round trip (the wake-up,
the read, the write), so no Python server beats its rate. Workloads: Heartbeat v3 of a 100-member group, and
OffsetCommit v7 of 1 topic x 10 partitions (ours with offsets.log.flush.policy=none, like for like with the peer, as
`ours+nosync`). Printed per server and workload: requests/s and the server's CPU µs per request (user+sys of its
processes over the timed run), the median of the interleaved repetitions (A B C A B C). Writes no docs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import statistics
import time
from collections.abc import Iterator

from bench.lib.commits import PARTITIONS, TOPIC, commit_check, commit_frames
from bench.lib.compare import wire_port
from bench.lib.members import heartbeat_check, heartbeat_group
from bench.lib.peers import Endpoint, start_server
from bench.lib.wire import WireClient

FLOOR = "floor"


def _floor_server(port_out: multiprocessing.SimpleQueue) -> None:  # type: ignore[type-arg]
    import uvloop

    class Answer(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: asyncio.Transport = transport  # type: ignore[assignment]

        def data_received(self, data: bytes) -> None:  # the frame's correlation id back, 6 zero bytes
            self.transport.write(b"\x00\x00\x00\x0a" + data[8:12] + bytes(6))

    async def serve() -> None:
        server = await asyncio.get_running_loop().create_server(Answer, "127.0.0.1", 0)
        port_out.put(server.sockets[0].getsockname()[1])
        await asyncio.Future()

    os.sched_setaffinity(0, {0})
    uvloop.run(serve())


@contextlib.contextmanager
def floor() -> Iterator[Endpoint]:
    """The floor server's Endpoint (its CPU read as the peers' are), stopped afterwards."""
    ports: multiprocessing.SimpleQueue = multiprocessing.SimpleQueue()  # type: ignore[type-arg]
    process = multiprocessing.Process(target=_floor_server, args=(ports,), daemon=True)
    process.start()
    try:
        assert process.pid is not None
        port = ports.get()
        yield Endpoint(FLOOR, "127.0.0.1", port, port, [process.pid])
    finally:
        process.kill()
        process.join()


def round_trips(endpoint: Endpoint, port: int, frames: list[bytes], seconds: float) -> tuple[float, float]:
    """(requests/s, server CPU µs per request) of `seconds` of one-at-a-time round trips, after a warm-up."""
    with WireClient(endpoint.host, port) as client:
        client.sock.settimeout(None)  # plain blocking reads: a timeout polls before every recv, on the client's clock

        def one(frame: bytes) -> bytes:
            client.send_raw(frame)
            return client.read_frame()

        for frame in frames[:100]:
            one(frame)
        cpu, started, n = endpoint.cpu_seconds(), time.perf_counter(), 0
        while time.perf_counter() - started < seconds:
            one(frames[n % len(frames)])
            n += 1
        elapsed = time.perf_counter() - started
        return n / elapsed, (endpoint.cpu_seconds() - cpu) / n * 1e6


def measure(name: str, workload: str, seconds: float) -> tuple[float, float]:
    if name == FLOOR:
        with floor() as endpoint:
            return round_trips(endpoint, endpoint.port, [b"\x00\x00\x00\x10" + bytes(16)], seconds)
    server = name if workload == "heartbeat" or not name.startswith("ours") else f"{name}+nosync"
    with start_server(server, cpu=0, topics={TOPIC: PARTITIONS}) as endpoint:
        port = wire_port(endpoint)
        if workload == "heartbeat":
            frames = asyncio.run(heartbeat_group(endpoint.host, port, 100, 45000))
            check = heartbeat_check
        else:
            frames, check = commit_frames(0), commit_check
        with WireClient(endpoint.host, port) as client:  # the first answer must be a success
            client.send_raw(frames[0])
            check(client.read_frame())
        return round_trips(endpoint, port, frames, seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default=f"{FLOOR},ours,noida-db")
    parser.add_argument("--workloads", default="heartbeat,commit")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {1})
    names, workloads = args.servers.split(","), args.workloads.split(",")
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _rep in range(args.reps):
        for workload in workloads:
            for name in names:
                if name == FLOOR and workload != "heartbeat":
                    continue  # the floor parses nothing: one row is enough
                results.setdefault((workload, name), []).append(measure(name, workload, args.seconds))
    print("| workload | server | requests/s | server CPU µs per request |\n|---|---|---|---|")
    for (workload, name), runs in results.items():
        rate = statistics.median(r for r, _cpu in runs)
        cpu = statistics.median(c for _r, c in runs)
        shown = "floor (uvloop, no parsing)" if name == FLOOR else name
        print(f"| {workload if name != FLOOR else 'any'} | {shown} | {rate:,.0f} | {cpu:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
