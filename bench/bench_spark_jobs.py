"""Bulk-load benchmark: generate an offsets log, time the Spark job and a plain load.

    .venv/bin/python -m bench.bench_spark_jobs [--size-mb 1024] [--partitions 4]
        [--master local[*]] [--dir /tmp/kgc-spark-bench] [--keep]

The log: many groups x topics x partitions with repeated commits (every key
committed ~``--repeats`` times, 50 records per batch, like a busy coordinator's group
commit), written straight as Kafka-format segments (128 MiB each) into
``--partitions`` __consumer_offsets-N directories, groups placed by partition_for.
Then it prints the bulk-load job's wall time and records/s, and the single-process
plain-Python rate of the same log (storage.dump.iter_log_records + decode_key +
decode_value, latest value per key in a dict) for comparison.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from rules.placement import partition_for
from storage.batch import assign_offsets, build_batch
from storage.dump import iter_log_records
from storage.records import OffsetCommitKey, OffsetCommitValue, decode_key, decode_value, encode_key, encode_value

SEGMENT_BYTES = 128 << 20
PER_BATCH = 50


def generate(root: str, size_mb: int, partitions: int, repeats: int) -> tuple[int, int]:
    """Write about ``size_mb`` MiB; returns (records, bytes)."""
    target = size_mb << 20
    files = {}
    state = {p: {"offset": 0, "base": 0, "size": 0} for p in range(partitions)}
    pending = {p: [] for p in range(partitions)}

    def flush(p):
        buf = bytearray(build_batch(pending[p]))
        s = state[p]
        if s["size"] + len(buf) > SEGMENT_BYTES and s["size"]:
            files[p].close()
            s["base"], s["size"] = s["offset"], 0
            files[p] = open(os.path.join(root, f"__consumer_offsets-{p}", f"{s['base']:020d}.log"), "wb")
        assign_offsets(buf, s["offset"])
        files[p].write(buf)
        s["offset"] += len(pending[p])
        s["size"] += len(buf)
        pending[p] = []
        return len(buf)

    for p in range(partitions):
        os.makedirs(os.path.join(root, f"__consumer_offsets-{p}"), exist_ok=True)
        files[p] = open(os.path.join(root, f"__consumer_offsets-{p}", f"{0:020d}.log"), "wb")
    written = records = 0
    keys_per_round = max(1, target // (repeats * 95))
    groups = max(1, keys_per_round // 200)  # 200 keys per group: 10 topics x 20 partitions
    rnd = 0
    while written < target:
        for g in range(groups):
            group = f"bench-group-{g:06d}"
            p = partition_for(group, partitions)
            for t in range(10):
                for q in range(20):
                    key = encode_key(OffsetCommitKey(group, f"topic-{t:02d}", q))
                    value = encode_value(OffsetCommitValue(rnd * 1000 + q, "", 1_700_000_000_000 + rnd, 5))
                    pending[p].append((key, value, 1_700_000_000_000 + rnd))
                    records += 1
                    if len(pending[p]) == PER_BATCH:
                        written += flush(p)
            if written >= target:
                break
        rnd += 1
    for p in range(partitions):
        if pending[p]:
            written += flush(p)
        files[p].close()
    return records, written


def plain_load(root: str, partitions: int) -> tuple[int, int, float]:
    t0 = time.perf_counter()
    n = 0
    state = {}
    for p in range(partitions):
        for _, key, value in iter_log_records(os.path.join(root, f"__consumer_offsets-{p}")):
            _, k = decode_key(key)
            state[k] = None if value is None else decode_value(k, value)[1]
            n += 1
    return n, len(state), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--dir", default="/tmp/kgc-spark-bench")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--skip-plain", action="store_true")
    args = ap.parse_args()
    logs, out = os.path.join(args.dir, "logs"), os.path.join(args.dir, "snapshots")
    shutil.rmtree(args.dir, ignore_errors=True)
    t0 = time.perf_counter()
    records, size = generate(logs, args.size_mb, args.partitions, args.repeats)
    print(f"generated {records:,} records, {size / 2**20:,.0f} MiB in {time.perf_counter() - t0:.1f}s")

    from spark_jobs.bulk_load import run
    t0 = time.perf_counter()
    summary = run(["--master", args.master, "--input", logs, "--output", out,
                   "--offsets-partitions", str(args.partitions)])
    wall = time.perf_counter() - t0
    print(f"bulk_load ({args.master}): {wall:.1f}s wall incl. JVM start, {records / wall:,.0f} records/s, "
          f"{size / 2**20 / wall:.1f} MiB/s; {summary['offsets']:,} live offsets in the snapshots")
    if not args.skip_plain:
        n, keys, secs = plain_load(logs, args.partitions)
        print(f"plain Python, one process: {secs:.1f}s, {n / secs:,.0f} records/s, {keys:,} keys")
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
