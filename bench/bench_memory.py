"""Memory per committed offset: server RSS growth after committing 1,000,000 distinct partition offsets.

    .venv/bin/python -m bench.bench_memory [--servers ours,tansu,noida-db,rdkafka-mock] [--reps 3]
        [--offsets 1000000] [--no-docs]

Each rep, for each server in turn (A B C A B C), a fresh server is started (pinned to core 0) with
10 topics of 100 partitions; one warm-up commit is made (so lazily built structures exist), the
server's RSS is read, then `--offsets` distinct offsets are committed through the wire: OffsetCommit
v7 outside group management, one group per request, 10 topics x 100 partitions per request,
pipelined (bench/lib/fleet.py, 16 connections x 8 in flight). Every partition's answer must be error code
0. After one second of rest the RSS is read again: (RSS after - RSS before) / offsets.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from bench.lib.commits import commit_check, commit_request
from bench.lib.compare import parser_for, pin_to_load_cpu, server_names, wire_port
from bench.lib.fleet import Pipe
from bench.lib.peers import PeerError, start_server
from bench.lib.report import command_line, machine_facts, markdown_table, median, write_section
from bench.lib.wire import request_frame

TOPICS, PARTITIONS = 10, 100
PER_REQUEST = TOPICS * PARTITIONS
TOPIC_PARTITIONS = {f"bench-mem-{t}": PARTITIONS for t in range(TOPICS)}


def commit_frame(group: str, offset: int) -> bytes:
    return request_frame(commit_request(group, TOPIC_PARTITIONS, offset))


async def commit_all(host: str, port: int, groups: list[str], connections: int = 16, in_flight: int = 8) -> None:
    """Commit PER_REQUEST offsets for every group; raise on the first error code."""
    pipes = [await Pipe.open(host, port) for _ in range(connections)]
    try:
        async def lane(pipe: Pipe, lane_groups: list[str]) -> None:
            for start in range(0, len(lane_groups), in_flight):
                chunk = lane_groups[start:start + in_flight]
                for body in await asyncio.gather(*pipe.send([commit_frame(g, 1000 + i) for i, g in enumerate(chunk)])):
                    commit_check(body)

        await asyncio.gather(*(lane(p, groups[i::connections]) for i, p in enumerate(pipes)))
    finally:
        for pipe in pipes:
            pipe.transport.close()  # type: ignore[union-attr]


def measure(name: str, offsets: int, rep: int) -> dict[str, Any]:
    with start_server(name, cpu=0, topics=TOPIC_PARTITIONS) as ep:
        host, port = ep.host, wire_port(ep)
        asyncio.run(commit_all(host, port, [f"warm-up-{rep}"], connections=1))
        time.sleep(0.5)
        before = ep.rss_bytes()
        started = time.perf_counter()
        asyncio.run(commit_all(host, port, [f"mem-{rep}-{g}" for g in range(offsets // PER_REQUEST)]))
        seconds = time.perf_counter() - started
        time.sleep(1.0)
        after = ep.rss_bytes()
    return {"before": before, "after": after, "per_offset": (after - before) / offsets, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("bench.bench_memory", __doc__)
    parser.add_argument("--offsets", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    names = server_names(args)
    offsets = args.offsets // PER_REQUEST * PER_REQUEST
    facts = machine_facts()
    pin_to_load_cpu()
    failures: list[str] = []
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for rep in range(args.reps):
        for name in names:
            try:
                runs[name].append(measure(name, offsets, rep))
            except (PeerError, RuntimeError, ValueError, OSError) as exc:
                failures.append(f"{name} rep {rep + 1}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                print(failures[-1], flush=True)
                continue
            r = runs[name][-1]
            print(f"rep {rep + 1} {name:<13} {r['per_offset']:,.1f} bytes/offset (RSS {r['before'] / 2**20:,.0f} -> "
                  f"{r['after'] / 2**20:,.0f} MB, committed in {r['seconds']:.1f} s)", flush=True)
    rows = []
    for name in names:
        per = [r["per_offset"] for r in runs[name]]
        rows.append([name, f"{median(per):,.0f}", f"{min(per):,.0f}-{max(per):,.0f}",
                     f"{median([r['before'] for r in runs[name]]) / 2**20:,.0f}",
                     f"{median([r['after'] for r in runs[name]]) / 2**20:,.0f}",
                     f"{median([offsets / r['seconds'] for r in runs[name]]):,.0f}"] if per
                    else [name, "failed", "", "", "", ""])
    text = (f"{offsets:,} distinct partition offsets ({offsets // PER_REQUEST:,} groups x {TOPICS} topics x "
            f"{PARTITIONS} partitions), a fresh server per run, {args.reps} interleaved repetitions:\n\n"
            + markdown_table(["server", "bytes per offset (median)", "min-max", "RSS before MB", "RSS after MB",
                              "offsets/s while committing"], rows)
            + "\n\nRSS is the resident memory of the server's processes (for the mock: the mock and its idle "
              "shim); the delta also holds whatever the server buffers for its log."
            + "".join(f"\n- {f}" for f in failures))
    print("\n" + text)
    figures = {"bytes_per_offset": {n: median([r["per_offset"] for r in v]) for n, v in runs.items() if v}}
    if not args.no_docs:
        write_section("memory", "Memory per committed offset (bench/bench_memory.py)",
                      command_line("bench.bench_memory", argv),
                      facts, text, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
