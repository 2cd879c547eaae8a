"""Servers side by side: start them together, run a workload on each in turn (A B C A B C ...), summarize.

Every wire benchmark that compares throughput uses `interleaved` with both client batchings from
`MODES` (a server that shines when requests are pipelined may not when a client waits for each
answer), and `summary_rows` for its table: median, min-max, latency, server and load-generator CPU,
and ours/peer. Servers run pinned to SERVER_CPU, the load generator to LOAD_CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bench.lib.loadgen import Result, Workload, run
from bench.lib.peers import NAMES, Endpoint, PeerError, start_server
from bench.lib.report import median

SERVER_CPU, LOAD_CPU = 0, 1


@dataclass(frozen=True)
class Mode:
    key: str
    label: str
    connections: int
    in_flight: int


PIPELINED = Mode("pipelined", "pipelined (16 connections x 32 in flight)", 16, 32)
ONE_AT_A_TIME = Mode("single", "one at a time (1 connection x 1 in flight)", 1, 1)
MODES = (PIPELINED, ONE_AT_A_TIME)


def wire_port(ep: Endpoint) -> int:
    """The port wire workloads use. For the rdkafka mock that is the mock itself: its shim is a Python
    proxy that only rewrites ApiVersions (which these workloads never send) and would be what we measure."""
    return ep.raw_port


@contextlib.contextmanager
def servers(names: Sequence[str], failures: list[str],
            topics: dict[str, int] | None = None) -> Iterator[dict[str, Endpoint]]:
    """Start every named server (pinned to SERVER_CPU); the ones that fail are noted in `failures`."""
    with contextlib.ExitStack() as stack:
        endpoints = {}
        for name in names:
            try:
                endpoints[name] = stack.enter_context(start_server(name, cpu=SERVER_CPU, topics=topics))
            except PeerError as exc:
                failures.append(f"{name}: could not start: {str(exc).splitlines()[0]}")
        yield endpoints


def interleaved(endpoints: dict[str, Endpoint], reps: int, workload_for: Callable[[str, Mode], Workload],
                failures: list[str], modes: Sequence[Mode] = MODES,
                log: Callable[[str], None] = print) -> dict[str, dict[str, list[Result]]]:
    """results[mode.key][server]: `reps` runs of each (mode, server), in the order rep, mode, server."""
    results: dict[str, dict[str, list[Result]]] = {m.key: {n: [] for n in endpoints} for m in modes}
    for rep in range(reps):
        for mode in modes:
            for name, ep in endpoints.items():
                try:
                    r = run(ep.host, wire_port(ep), workload_for(name, mode), cpu=LOAD_CPU,
                            cpu_probe=ep.cpu_seconds)
                except RuntimeError as exc:
                    failures.append(f"{name} {mode.key} rep {rep + 1}: {str(exc).splitlines()[0]}")
                    continue
                results[mode.key][name].append(r)
                log(f"rep {rep + 1} {mode.key:<9} {name:<13} {r.rps:>10,.0f}/s  p50 {r.p50_us:>7,.0f} µs  "
                    f"p99 {r.p99_us:>7,.0f} µs  server CPU {r.server_cpu or 0:.2f}  "
                    f"loadgen CPU {r.client_cpu:.2f}  other CPU {r.other_cpu or 0:.2f}")
    return results


SUMMARY_HEADER = ["server", "median {unit}", "min-max", "p50 µs", "p99 µs", "server CPU", "loadgen CPU",
                  "other CPU", "ours / this"]


def summary_header(unit: str) -> list[str]:
    return [h.format(unit=unit) for h in SUMMARY_HEADER]


def summary_rows(by_server: dict[str, list[Result]], scale: float = 1.0) -> list[list[Any]]:
    """One row per server; rates are multiplied by `scale` (e.g. partitions per request)."""
    ours = by_server.get("ours")
    ours_rate = median([r.rps for r in ours]) * scale if ours else None
    rows = []
    for name, runs in by_server.items():
        if not runs:
            rows.append([name, "failed", "", "", "", "", "", "", ""])
            continue
        rates = [r.rps * scale for r in runs]
        m = median(rates)
        rows.append([name, f"{m:,.0f}", f"{min(rates):,.0f}-{max(rates):,.0f}",
                     f"{median([r.p50_us for r in runs]):,.0f}", f"{median([r.p99_us for r in runs]):,.0f}",
                     f"{median([r.server_cpu or 0.0 for r in runs]):.2f}",
                     f"{median([r.client_cpu for r in runs]):.2f}",
                     f"{median([r.other_cpu or 0.0 for r in runs]):.2f}",
                     "-" if name == "ours" or ours_rate is None else f"{ours_rate / m:.2f}"])
    return rows


def medians(by_server: dict[str, list[Result]], scale: float = 1.0) -> dict[str, float]:
    """Median rate per server that has runs: the figures the summary table reads."""
    return {name: median([r.rps for r in runs]) * scale for name, runs in by_server.items() if runs}


def parser_for(module: str, doc: str | None, reps: int = 3, timed: bool = False) -> argparse.ArgumentParser:
    """The options every comparison shares: --servers, --reps, --no-docs; with `timed`, the timed
    seconds of a run in each batching (--seconds, --single-seconds: see `seconds_of`)."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", default=",".join(NAMES), help="comma-separated, from: " + ", ".join(NAMES))
    parser.add_argument("--reps", type=int, default=reps, help="interleaved repetitions")
    parser.add_argument("--no-docs", "--no-write", dest="no_docs", action="store_true",
                        help="print only; do not touch docs/BENCHMARKS.md")
    if timed:
        parser.add_argument("--seconds", type=float, default=4.0, help="timed seconds per pipelined run")
        parser.add_argument("--single-seconds", type=float, default=2.0, help="timed seconds per 1x1 run")
    return parser


def seconds_of(args: argparse.Namespace, mode: Mode) -> float:
    """The timed seconds of a run in `mode` (parser_for(..., timed=True))."""
    return args.seconds if mode.in_flight > 1 else args.single_seconds


def server_names(args: argparse.Namespace) -> list[str]:
    return [n.strip() for n in args.servers.split(",") if n.strip()]


def pin_to_load_cpu() -> None:
    """Run this process (member clients that share the load generator's core) on LOAD_CPU, if it may."""
    if LOAD_CPU in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {LOAD_CPU})
