"""EmbeddedKafka start-to-ready (issue 34): how long a test waits for its broker.

    .venv/bin/python -m bench.bench_embedded [--runs 10] [--no-docs] [--against DIR]

Each run starts a fresh EmbeddedKafka (a new temp dir: nothing to load), in a process of its own
(bench/embedded_probe.py: ready, group Stable, kill + restart), and `python -m coordinator serve` (what the
kafka-coordinator script runs) with the default settings - 50 offsets and 50 transaction state partitions - in
a new directory, until its log says `offsets partitions loaded`.

--against DIR measures the tree DIR (say main's: `git worktree add DIR main`, or `python -m bench.peers snapshot
DIR`) and this one alternately, A B A B, `--runs` runs per side and round: the machine is shared, so only
figures taken together compare. The load average is printed with the figures, and whether bytecode is cached:
with PYTHONDONTWRITEBYTECODE set (this VM's shells set it) a tree without __pycache__ compiles every module of
ours at every start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.lib.report import command_line, machine_facts, markdown_table, median, write_section

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "bench" / "embedded_probe.py"
SERVE_TIMEOUT_S = 120.0
ROWS = (("ready", "EmbeddedKafka start() to ready"),
        ("stable", "EmbeddedKafka start() to a consumer group Stable (1 member)"),
        ("restart", "EmbeddedKafka kill() + restart() to ready"),
        ("serve", "`python -m coordinator serve`, defaults (50 + 50 partitions), to `offsets partitions loaded`"))
BREAKDOWN = """\
Where the time went (issue 34, measured on this VM): main's 7.2 s was ~3 s of kio's hypothesis hook (kio imports
hypothesis when it is installed - it is with the tests - and hypothesis builds its Unicode tables into
`.hypothesis/` of the working directory, a new temp dir at every EmbeddedKafka start; ~0.4 s of imports besides),
~2 s importing every kio request/response class of every API version (protocol/apis.py), ~0.1 s of rich through
structlog, ~0.1 s of aiokafka's parser for empty logs, ~30 ms of asyncpg in local mode, and 100 partition logs
opened one after the other (a new one fsyncs its directory, a restarted one two index files: ~3 ms each).
Now: kio classes load per (api, version) on first use, the serve command imports kio without hypothesis and
structlog without rich (coordinator/serve_imports.py), the record parser and the PostgreSQL driver load when
used, and a start opens its partition logs concurrently. What is left is the interpreter (~30 ms), importing the
server's modules (`python -X importtime`: 0.4-0.7 s, ~180 dataclasses of our own among them) and App start
(~0.1 s); without bytecode caches (PYTHONDONTWRITEBYTECODE and no __pycache__) compiling them adds ~0.3-0.5 s.
A group is Stable as soon as its member joins (EmbeddedKafka sets group.initial.rebalance.delay.ms=0)."""


def _env(tree: Path) -> dict[str, str]:
    """`tree`'s packages first (the shared .venv's editable install may point at another checkout)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}


def embedded_run(tree: Path, index: int) -> dict[str, float]:
    # -P: the probe's directory (bench/, whose profile/ would shadow the standard library's) not on sys.path
    out = subprocess.run([sys.executable, "-P", str(PROBE), str(index)], cwd=tree, env=_env(tree), capture_output=True,
                         text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"embedded_probe.py failed in {tree}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def serve_run(tree: Path) -> float:
    """Seconds from spawning `tree`'s serve command until its log says `offsets partitions loaded`."""
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as root:
        began = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "coordinator", "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
             "--override", f"log.dirs={root}/data"],
            cwd=root, env=_env(tree), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        watchdog = threading.Timer(SERVE_TIMEOUT_S, process.kill)
        watchdog.start()
        loaded = None
        try:
            assert process.stderr is not None
            for line in process.stderr:
                if "offsets partitions loaded" in line:
                    loaded = time.perf_counter() - began
                    break
        finally:
            watchdog.cancel()
            process.terminate()
            process.wait(30)
        if loaded is None:
            raise RuntimeError(f"the serve command of {tree} exited or hung before loading its offsets partitions")
        return loaded


def measure(tree: Path, runs: int, label: str) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {key: [] for key, _ in ROWS}
    for i in range(runs):
        run = {**embedded_run(tree, i), "serve": serve_run(tree)}
        for key, value in run.items():
            found[key].append(value)
        print(f"{label} run {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in run.items()), flush=True)
    return found


def _cell(values: list[float]) -> str:
    return f"{median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def _bytecode() -> str:
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return ("PYTHONDONTWRITEBYTECODE is set: bytecode is read where a __pycache__ exists, never written "
                "(a tree without one compiles our modules at every start)")
    return "bytecode cached (__pycache__ written and read, as an installed wheel has it)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-docs", action="store_true", help="print only, do not write docs/BENCHMARKS.md")
    parser.add_argument("--against", type=Path, help="another tree, measured alternately with this one (A B A B)")
    args = parser.parse_args(argv)
    sides = [("this tree", ROOT)] if args.against is None else [("A", args.against.resolve()), ("B", ROOT)] * 2
    load_before = os.getloadavg()[0]
    results = [(label, measure(tree, args.runs, label)) for label, tree in sides]
    load_after = os.getloadavg()[0]
    if args.against is None:
        header = ["what", "median s (min-max)"]
    else:
        header = ["what", *(f"{label} round {1 + i // 2}, median s (min-max)" for i, (label, _) in enumerate(sides))]
    table = markdown_table(header, [[text, *(_cell(found[key]) for _, found in results)] for key, text in ROWS])
    what = "" if args.against is None else (f"A is `{args.against}`, B this tree, measured alternately (A B A B). ")
    body = (f"{what}{args.runs} runs per column, each a fresh EmbeddedKafka (a new temp dir) in a process of its "
            f"own and a serve command in a new directory; load average {load_before:.1f} before and "
            f"{load_after:.1f} after; {_bytecode()}.\n\n{table}\n\n{BREAKDOWN}")
    print(table)
    if not args.no_docs:
        write_section("embedded_start", "EmbeddedKafka start-to-ready (issue 34)",
                      command_line("bench.bench_embedded", argv), machine_facts(), body)


if __name__ == "__main__":
    main()
