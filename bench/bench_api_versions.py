"""ApiVersions requests/s over loopback: our server against tansu, noida-db and librdkafka's mock.

    .venv/bin/python -m bench.bench_api_versions [--reps 5] [--seconds 4] [--single-seconds 2]
                                                [--servers ours,tansu,noida-db,rdkafka-mock] [--no-docs]

All servers are started at once (each pinned to core 0) and measured in the same run, interleaved
(A B C D A B C D ...), `--reps` times (default 5), in two modes: pipelined (16 connections x 32 requests in
flight) and one at a time (1 connection, 1 in flight). The load generator runs on core 1. Requests
are ApiVersions v3 (what librdkafka and the Java client send first), except for the rdkafka mock,
which only implements v0-2 and answers v3 with a malformed error: it gets v2, sent to the mock's own
port (bypassing the Python ApiVersions shim, which would otherwise be what is measured). Each
response's error code is checked on the first response of every connection.

Prints, and writes to docs/BENCHMARKS.md: median and min-max requests/s, median p50/p99 latency,
median server and load-generator CPU (1.00 = one full core) and the ratio ours/peer.
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

from kio.schema.api_versions.v2.request import ApiVersionsRequest as ApiVersionsRequestV2
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from bench.lib.compare import (
    ONE_AT_A_TIME,
    Mode,
    interleaved,
    parser_for,
    seconds_of,
    server_names,
    servers,
    summary_rows,
)
from bench.lib.loadgen import Result, Workload
from bench.lib.report import command_line, machine_facts, markdown_table, write_section
from bench.lib.wire import request_frame


def frame_for(name: str) -> tuple[bytes, str]:
    if name == "rdkafka-mock":
        return request_frame(ApiVersionsRequestV2(), correlation_id=7), "v2"
    request = ApiVersionsRequest(client_software_name="bench", client_software_version="1.0")
    return request_frame(request, correlation_id=7), "v3"


def check_no_error(body: bytes) -> None:
    """ApiVersions responses use header v0: correlation id, then the int16 error code."""
    (code,) = struct.unpack_from(">h", body, 4)
    if code != 0:
        raise ValueError(f"ApiVersions answered error code {code}")


def workload_for(args: argparse.Namespace) -> Callable[[str, Mode], Workload]:
    def workload(name: str, mode: Mode) -> Workload:
        return Workload([frame_for(name)[0]], connections=mode.connections, in_flight=mode.in_flight,
                        duration=seconds_of(args, mode), warmup=0.5 if mode.in_flight > 1 else 0.3,
                        check=check_no_error)

    return workload


def table_rows(names: list[str], by_server: dict[str, list[Result]]) -> list[list[Any]]:
    """compare.summary_rows with the ApiVersions version each server gets and the size of its answer."""
    rows = summary_rows(by_server)
    for name, row in zip(names, rows):
        runs = by_server[name]
        row[1:1] = [frame_for(name)[1]]
        row[-1:-1] = [runs[0].response_bytes if runs else ""]
    return rows


HEADER = ["server", "ApiVersions", "median req/s", "min-max req/s", "p50 µs", "p99 µs",
          "server CPU", "loadgen CPU", "other CPU", "response bytes", "ours / this"]


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("bench.bench_api_versions", __doc__, reps=5, timed=True)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--in-flight", type=int, default=32)
    args = parser.parse_args(argv)
    names = server_names(args)
    facts = machine_facts()
    started = time.monotonic()
    modes = (Mode("pipelined", f"pipelined ({args.connections} connections x {args.in_flight} in flight)",
                  args.connections, args.in_flight), ONE_AT_A_TIME)
    failures: list[str] = []
    with servers(names, failures) as endpoints:
        results = interleaved(endpoints, args.reps, workload_for(args), failures, modes)
    body = [f"### {mode.label}, {args.reps} interleaved repetitions\n\n"
            f"{markdown_table(HEADER, table_rows(list(endpoints), results[mode.key]))}" for mode in modes]
    body.append(NOTES + "".join(f"\n- {f}" for f in failures))
    text = "\n\n".join(body)
    print("\n" + text)
    print(f"\ntotal {time.monotonic() - started:.0f}s")
    if not args.no_docs:
        path = write_section("api_versions", "ApiVersions requests/s (bench/bench_api_versions.py)",
                             command_line("bench.bench_api_versions", argv), facts, text)
        print(f"wrote {path}")
    return 0


NOTES = """Notes:
- req/s counts responses received in the timed window (after a warm-up); latency is send-to-receive
  per request as the load generator sees it. In pipelined mode p50 is dominated by queueing
  (512 requests outstanding), so compare throughput there and latency in the one-at-a-time mode.
- CPU columns are user+system CPU seconds per wall second (1.00 = one core busy). A server near 1.00
  was the bottleneck; a load generator near 1.00 means that figure is a lower bound for the server.
  "other CPU" is what the rest of the machine (other people's work, the kernel) used meanwhile: when
  it is well above 0 the run competed for the two cores and its figures are pessimistic.
- The rdkafka mock gets ApiVersions v2 on its own port (it implements v0-2; the shared shim in front
  of it answers v3 itself in Python, which would measure the shim). Response sizes differ: each
  server lists the APIs it implements (ours lists only the few it speaks so far).
- Seen while building this: one-at-a-time p99 of ~3 ms shows up whenever "other CPU" is high (the
  woken process waits for a core); in quiet runs every server's p99 there was ~0.2 ms. noida-db's
  pipelined p50 far below its p99 means it serves some connections long before others (unfair),
  not that it is faster per request."""


if __name__ == "__main__":
    sys.exit(main())
