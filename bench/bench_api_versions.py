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
import contextlib
import struct
import sys
import time
from typing import Any

from kio.schema.api_versions.v2.request import ApiVersionsRequest as ApiVersionsRequestV2
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from bench.lib.compare import LOAD_CPU, SERVER_CPU
from bench.lib.loadgen import Result, Workload, run
from bench.lib.peers import NAMES, PeerError, start_server
from bench.lib.report import command_line, machine_facts, markdown_table, median, write_section
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


def summarize(name: str, runs: list[Result], ours: list[Result] | None, version: str) -> list[Any]:
    rps = [r.rps for r in runs]
    row = [name, version, f"{median(rps):,.0f}", f"{min(rps):,.0f}-{max(rps):,.0f}",
           f"{median([r.p50_us for r in runs]):,.0f}", f"{median([r.p99_us for r in runs]):,.0f}",
           f"{median([r.server_cpu or 0.0 for r in runs]):.2f}", f"{median([r.client_cpu for r in runs]):.2f}",
           f"{median([r.other_cpu or 0.0 for r in runs]):.2f}", runs[0].response_bytes]
    if ours is not None and name != "ours":
        row.append(f"{median([r.rps for r in ours]) / median(rps):.2f}")
    else:
        row.append("-")
    return row


HEADER = ["server", "ApiVersions", "median req/s", "min-max req/s", "p50 µs", "p99 µs",
          "server CPU", "loadgen CPU", "other CPU", "response bytes", "ours / this"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_api_versions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0, help="timed seconds per pipelined run")
    parser.add_argument("--single-seconds", type=float, default=2.0, help="timed seconds per 1-in-flight run")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--servers", default=",".join(NAMES))
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    facts = machine_facts()
    started = time.monotonic()
    modes = {
        f"pipelined ({args.connections} connections x {args.in_flight} in flight)":
            dict(connections=args.connections, in_flight=args.in_flight, duration=args.seconds, warmup=0.5),
        "one at a time (1 connection, 1 in flight)":
            dict(connections=1, in_flight=1, duration=args.single_seconds, warmup=0.3),
    }
    results: dict[str, dict[str, list[Result]]] = {m: {n: [] for n in names} for m in modes}
    try:
        with contextlib.ExitStack() as stack:
            endpoints = {}
            for name in names:
                endpoints[name] = stack.enter_context(start_server(name, cpu=SERVER_CPU))
                print(f"started {name} on {endpoints[name].address} (measuring port "
                      f"{endpoints[name].raw_port})", flush=True)
            for rep in range(args.reps):
                for mode, params in modes.items():
                    for name in names:
                        ep = endpoints[name]
                        frame, _ = frame_for(name)
                        workload = Workload([frame], check=check_no_error, **params)
                        r = run(ep.host, ep.raw_port, workload, cpu=LOAD_CPU, cpu_probe=ep.cpu_seconds)
                        results[mode][name].append(r)
                        print(f"rep {rep + 1} {mode.split(' (')[0]:<13} {name:<13} {r.rps:>10,.0f} req/s  "
                              f"p50 {r.p50_us:>7,.0f} µs  p99 {r.p99_us:>7,.0f} µs  "
                              f"server CPU {r.server_cpu or 0:.2f}  loadgen CPU {r.client_cpu:.2f}  "
                              f"other CPU {r.other_cpu or 0:.2f}", flush=True)
    except (PeerError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    body = []
    for mode in modes:
        ours = results[mode].get("ours")
        rows = [summarize(n, results[mode][n], ours, frame_for(n)[1]) for n in names]
        body.append(f"### {mode}, {args.reps} interleaved repetitions\n\n{markdown_table(HEADER, rows)}")
    body.append(NOTES)
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
