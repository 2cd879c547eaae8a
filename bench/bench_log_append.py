"""Durable append throughput of storage.log.PartitionLog (not a test).

For each flush policy (fsync on / off) and each group size (1, 10, 100 appends in
one event-loop turn, each append one OffsetCommit-sized record in its own batch),
appends for a fixed time and awaits every durability future. Prints records/s,
flushes/s, fsyncs/s and MB/s of log bytes.

    .venv/bin/python -m bench.bench_log_append [--seconds 3] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time

from storage.batch import build_batch
from storage.log import PartitionLog

KEY = b"\x00\x01" + b"g" * 20 + b"topic-name-xx" + b"\x00\x00\x00\x07"  # ~40 B, like OffsetCommitKey
VALUE = b"\x00\x03" + b"\x00" * 8 + b"\xff\xff\xff\xff" + b"\x00\x00" + b"\x00" * 16  # ~32 B


async def run(path: str, policy: str, group: int, seconds: float) -> dict:
    fsyncs = 0

    def counting_fsync(fd):
        nonlocal fsyncs
        fsyncs += 1
        os.fsync(fd)

    lg = PartitionLog.open(path, flush_policy=policy, flush_interval_ms=1000,
                           segment_bytes=100 * 1024 * 1024, fsync=counting_fsync)
    fsyncs = 0
    records = flushes = 0
    start_bytes = lg.segments[-1].size
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        results = [lg.append_records([(KEY, VALUE, 1_700_000_000_000 + records + i)]).durable
                   for i in range(group)]
        await asyncio.gather(*results)
        records += group
        flushes += 1
    elapsed = time.perf_counter() - t0
    written = sum(s.size for s in lg.segments) - start_bytes
    f = fsyncs
    await lg.close()
    return {"records/s": records / elapsed, "flushes/s": flushes / elapsed,
            "fsyncs/s": f / elapsed, "MB/s": written / elapsed / 1e6}


def bench_encode(n: int = 50_000) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        build_batch([(KEY, VALUE, i)])
    return n / (time.perf_counter() - t0)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench-log-", dir=args.dir)
    try:
        print(f"build_batch (1 record): {bench_encode():,.0f} batches/s")
        print(f"{'policy':<7}{'per flush':>10}{'records/s':>12}{'flushes/s':>11}{'fsyncs/s':>10}{'MB/s':>8}")
        for policy in ("fsync", "none"):
            for group in (1, 10, 100):
                path = os.path.join(root, f"{policy}-{group}", "bench-0")
                r = await run(path, policy, group, args.seconds)
                print(f"{policy:<7}{group:>10}{r['records/s']:>12,.0f}{r['flushes/s']:>11,.0f}"
                      f"{r['fsyncs/s']:>10,.0f}{r['MB/s']:>8.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main())
