"""Run every benchmark and write their sections of docs/BENCHMARKS.md (bench/lib/report.py).

    .venv/bin/python -m bench.run_all            # everything, ~25 minutes, writes docs/BENCHMARKS.md
    .venv/bin/python -m bench.run_all --quick    # every workload briefly, a smoke run (docs untouched)
    .venv/bin/python -m bench.run_all --only bench_groups,bench_rejoin   # a subset
"""

from __future__ import annotations

import sys
import time

from bench import (
    bench_api_versions,
    bench_codec,
    bench_consumer_groups,
    bench_groups,
    bench_memory,
    bench_offsets,
    bench_rejoin,
    bench_steady,
    bench_tls,
)
from bench.lib.report import DOC


def main(argv: list[str] | None = None) -> int:
    import argparse

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
        (bench_tls, [], ["--reps", "1", "--seconds", "1", "--single-seconds", "0.5"]),
        (bench_consumer_groups, [], ["--reps", "1", "--seconds", "1", "--single-seconds", "0.5"]),
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
        except Exception as exc:  # one broken benchmark must not hide the others
            print(f"{name} failed: {type(exc).__name__}: {exc}", flush=True)
            rc = 1
    print(f"\nall benchmarks: {time.monotonic() - started:.0f} s" + ("" if quick else f"; wrote {DOC}"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
