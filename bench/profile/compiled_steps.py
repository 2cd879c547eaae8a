"""The OffsetCommit hot path compiled against pure Python, per step, in one session (issue 19's measurement):

    .venv/bin/python -m bench.profile.compiled_steps [--compiler cython|mypyc] [--reps 2] [--repeat 200]
        [--rounds 60] [--keep DIR] [--modules a.py,b.py]

Copies this tree's packages into DIR (a temporary directory unless `--keep`), compiles HOT_MODULES
there in place (Cython 3 on the unchanged `.py` files, or mypyc), then runs bench.profile.offsets_steps
and bench.profile.commit_cpu from the copy (compiled) and from this tree (pure Python), alternating
A B A B `--reps` times on core 0, and prints a table of medians: µs per request per step, pure,
compiled and pure / compiled. A step that fails in the compiled copy is reported as such (mypyc
compiles some of these modules into code that crashes: a finding, not an error of this script).

The compiled copy is also a tree for the wire benchmarks (`--keep DIR`, then e.g.
`python -m bench.bench_offsets --servers ours+nosync,ours@DIR+nosync,noida-db`). Neither compiler
is a dependency of the project: `pip install cython` into .venv first (mypy ships mypyc).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("primitives", "rules", "protocol", "storage", "coordinator", "bench")
#: The modules a pipelined OffsetCommit runs through (framing to answer, log append and flush).
HOT_MODULES = (
    "protocol/framing.py", "protocol/header.py", "protocol/codec.py", "protocol/bounds.py",
    "coordinator/net/connection.py", "coordinator/net/dispatch.py", "coordinator/handlers/offset_commit.py",
    "coordinator/offsets/manager.py", "coordinator/offsets/store.py", "coordinator/offsets/known_topics.py",
    "coordinator/records/log_codec.py", "coordinator/runtime/shard.py", "coordinator/runtime/writes.py",
    "coordinator/runtime/durable_log.py", "coordinator/completion.py", "storage/batch.py", "storage/log.py",
    "storage/varint.py",
)
_STEP = re.compile(r"^(.+?)\s+([\d.]+) us per request$")
_CPU = re.compile(r"^event-loop thread CPU per OffsetCommit .*median ([\d.]+) µs")
_CYTHON_BUILD = """
import sys
from Cython.Build import cythonize
from setuptools import setup
setup(ext_modules=cythonize(sys.argv[1:], compiler_directives={"language_level": 3}, quiet=True),
      script_args=["build_ext", "--inplace"])
"""


def copy_tree(target: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, target / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))


def compile_copy(target: Path, compiler: str, modules: list[str]) -> None:
    if compiler == "cython":
        command = [sys.executable, "-c", _CYTHON_BUILD, *modules]
    else:
        command = [str(Path(sys.executable).with_name("mypyc")), *modules]
    done = subprocess.run(command, cwd=target, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{compiler} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    built = [p for p in target.rglob("*.so") if p.relative_to(target).parts[0] in PACKAGES]
    print(f"{compiler}: {len(built)} extension modules built in {target}", flush=True)


def run_steps(tree: Path, args: argparse.Namespace) -> dict[str, float | None]:
    """µs per request per step from offsets_steps, and commit_cpu's median; None for a run that failed."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out: dict[str, float | None] = {}
    for module, extra in (("bench.profile.offsets_steps", ["--repeat", str(args.repeat)]),
                          ("bench.profile.commit_cpu", ["--rounds", str(args.rounds)])):
        done = subprocess.run(["taskset", "-c", "0", sys.executable, "-m", module, *extra], cwd=tree, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            out[f"{module} (exit {done.returncode})"] = None
            continue
        for line in done.stdout.splitlines():
            step, cpu = _STEP.match(line.strip()), _CPU.match(line.strip())
            if step:
                out[line[:len(line) - len(line.lstrip())] + step.group(1)] = float(step.group(2))
            elif cpu:
                out["whole server path, event-loop CPU (commit_cpu median)"] = float(cpu.group(1))
    return out


def table(pure: list[dict], compiled: list[dict]) -> str:
    rows = ["| step (µs per request) | pure Python | compiled | pure / compiled |", "|---|---|---|---|"]
    steps = list(dict.fromkeys(k for run in pure + compiled for k in run))
    for step in steps:
        a = [r[step] for r in pure if r.get(step) is not None]
        b = [r[step] for r in compiled if r.get(step) is not None]
        left = f"{statistics.median(a):.2f}" if a else "failed"
        right = f"{statistics.median(b):.2f}" if b else "failed"
        ratio = f"{statistics.median(a) / statistics.median(b):.2f}" if a and b else "-"
        rows.append(f"| {step.replace('  ', '&nbsp;&nbsp;')} | {left} | {right} | {ratio} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiler", choices=("cython", "mypyc"), default="cython")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=200, help="offsets_steps --repeat")
    parser.add_argument("--rounds", type=int, default=60, help="commit_cpu --rounds")
    parser.add_argument("--keep", type=Path, help="build the compiled copy here and keep it")
    parser.add_argument("--modules", help="comma-separated paths to compile instead of HOT_MODULES")
    args = parser.parse_args()
    target = args.keep or Path(tempfile.mkdtemp(prefix="compiled-steps-"))
    target.mkdir(parents=True, exist_ok=True)
    try:
        copy_tree(target)
        compile_copy(target, args.compiler, args.modules.split(",") if args.modules else list(HOT_MODULES))
        pure: list[dict] = []
        compiled: list[dict] = []
        for rep in range(args.reps):
            pure.append(run_steps(ROOT, args))
            compiled.append(run_steps(target, args))
            print(f"rep {rep + 1} of {args.reps} done", flush=True)
        print(table(pure, compiled))
    finally:
        if args.keep is None:
            shutil.rmtree(target, ignore_errors=True)


if __name__ == "__main__":
    main()
