"""OffsetFetch against peers: committed offsets read back, the request a consumer sends when it starts or rebalances.

    .venv/bin/python -m bench.bench_offset_fetch [--servers ours,ours+pure,noida-db] [--reps 2] [--seconds 4]
        [--single-seconds 2]

Each connection first commits offsets for 1 topic x 10 partitions of its own group (OffsetCommit v7 outside
group management, as bench_offsets), then sends pre-encoded OffsetFetch v8 requests (one group, that topic, its
10 partitions) in both batchings (16 connections x 32 in flight; 1 x 1); every answer's partitions must carry
error code 0 and the committed offset. Servers pinned to core 0, the load generator to core 1, interleaved.
Prints each run (with the server's CPU per request) and the summary table; writes nothing to docs/.
"""

from __future__ import annotations

import socket
import struct

from kio.schema.offset_fetch.v8.request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.static.primitive import i32

from bench.lib.commits import PARTITIONS, TOPIC, commit_request
from bench.lib.compare import (
    MODES,
    Mode,
    interleaved,
    parser_for,
    seconds_of,
    server_names,
    servers,
    summary_header,
    summary_rows,
)
from bench.lib.loadgen import Workload
from bench.lib.report import machine_facts, markdown_table, median
from bench.lib.wire import request_frame

COMMITTED = 4242


def group_of(connection: int) -> str:
    return f"bench-fetch-{connection}"


def fetch_frame(group: str, correlation_id: int) -> bytes:
    return request_frame(OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id=group, topics=(
        OffsetFetchRequestTopics(name=TOPIC, partition_indexes=tuple(i32(p) for p in range(PARTITIONS))),)),),
        require_stable=False), correlation_id=correlation_id)


def _exchange(sock: socket.socket, frame: bytes) -> bytes:
    sock.sendall(frame)
    head = sock.recv(4, socket.MSG_WAITALL)
    (size,) = struct.unpack(">i", head)
    return sock.recv(size, socket.MSG_WAITALL)


def commit_first(connections: int):
    """The workload's setup: every connection's group gets its offsets before the timed fetches."""
    def setup(host: str, port: int) -> None:
        with socket.create_connection((host, port), timeout=10) as sock:
            for c in range(connections):
                _exchange(sock, request_frame(commit_request(group_of(c), {TOPIC: PARTITIONS}, COMMITTED), c + 1))
        return None
    return setup


def fetch_check(body: bytes) -> None:
    """OffsetFetch v8 answer (flexible header v1): correlation, tags, throttle, groups[id, topics[name,
    partitions[index, offset, epoch, metadata, error, tags], tags], error, tags], tags."""
    pos = 4 + 1 + 4
    groups = body[pos] - 1
    pos += 1
    for _ in range(groups):
        pos += 1 + body[pos] - 1  # group id (short)
        topics = body[pos] - 1
        pos += 1
        for _ in range(topics):
            pos += 1 + body[pos] - 1
            parts = body[pos] - 1
            pos += 1
            for _ in range(parts):
                _index, offset, _epoch = struct.unpack_from(">iqi", body, pos)
                pos += 16
                pos += 1 + max(0, body[pos] - 1)  # metadata (compact nullable)
                (code,) = struct.unpack_from(">h", body, pos)
                pos += 2 + 1
                if code != 0 or offset != COMMITTED:
                    raise ValueError(f"OffsetFetch answered code {code}, offset {offset}")
            pos += 1
        (code,) = struct.unpack_from(">h", body, pos)
        if code != 0:
            raise ValueError(f"OffsetFetch answered group error code {code}")
        pos += 3


def fetch_workload(seconds: float, mode: Mode) -> Workload:
    per_connection = [[fetch_frame(group_of(c), i + 1) for i in range(64)] for c in range(mode.connections)]
    return Workload(per_connection[0], connections=mode.connections, in_flight=mode.in_flight, duration=seconds,
                    warmup=1.0, check=fetch_check, frames_for=lambda c: per_connection[c],
                    setup=commit_first(mode.connections))


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("bench.bench_offset_fetch", __doc__, reps=2, timed=True)
    args = parser.parse_args(argv)
    failures: list[str] = []
    print(machine_facts())
    with servers(server_names(args), failures, topics={TOPIC: PARTITIONS}) as endpoints:
        results = interleaved(endpoints, args.reps, lambda _n, mode: fetch_workload(seconds_of(args, mode), mode),
                              failures)
    for mode in MODES:
        print(f"\n{mode.label}, OffsetFetch requests/s (10 partitions each):\n")
        print(markdown_table(summary_header("requests/s"), summary_rows(results[mode.key])))
        for name, runs in results[mode.key].items():
            if runs:
                cpu_us = median([(r.server_cpu or 0.0) * 1e6 / r.rps for r in runs])
                print(f"server CPU per request {name}: {cpu_us:.1f} µs")
    if failures:
        print("Failures: " + "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
