"""Offsets benchmarks: durable OffsetCommit throughput against peers, and offsets-log load rate.

    .venv/bin/python -m bench.bench_offsets [--servers ours,tansu,noida-db,rdkafka-mock]
        [--reps 3] [--seconds 4] [--single-seconds 2] [--load-mb 256] [--no-docs]

1. OffsetCommit partition-offsets/s: pre-encoded OffsetCommit v7 requests (generation -1, empty
   member id: commits outside group management), each 1 topic x 10 partitions, in both client
   batchings (bench.compare.MODES: 16 connections x 32 in flight, one group per connection so
   several offsets partitions take part; and 1 connection x 1 in flight), by bench.loadgen pinned
   to core 1; servers pinned to core 0. Ours runs with its defaults:
   fsync group commit on (an answer means the batch was fsync'ed). Servers are started together
   and measured interleaved (rep, batching, server), `--reps` times each; the tables show median,
   min-max and ours / peer.
   Each run's first answer per connection must carry error code 0 for all 10 partitions.
2. Load rate: a script writes one __consumer_offsets partition of `--load-mb` MB (10 000 groups x
   10 topics x 8 partitions committed over and over, batches of 50 records as a busy server
   writes them), then the server's loader (coordinator.loader.load_shard) replays it; records/s
   and MB/s of the load, in-process on one core.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time

from bench.lib.commits import PARTITIONS, TOPIC, commit_workload
from bench.lib.compare import (
    MODES,
    Mode,
    interleaved,
    medians,
    parser_for,
    seconds_of,
    server_names,
    servers,
    summary_header,
    summary_rows,
)
from bench.lib.loadgen import Workload
from bench.lib.report import machine_facts, markdown_table, median, write_section

# --- load rate ---------------------------------------------------------------------------------

def write_offsets_partition(root: str, megabytes: int) -> tuple[int, int]:
    """Write one partition of about `megabytes` MB; returns (records, bytes)."""
    from coordinator.records.log_codec import offset_key, offset_value
    from coordinator.records.types import OffsetValue
    from coordinator.runtime.durable_log import DurableLog
    from storage.batch import build_batch

    async def go() -> tuple[int, int]:
        durable = DurableLog(root, flush_policy="none")
        plog = durable.open_partition(0)
        target = megabytes << 20
        written = records = 0
        i = 0
        keys = [offset_key(f"group-{g}", f"topic-{t}", p) for g in range(10_000) for t in range(10) for p in range(8)]
        while written < target:
            batch = build_batch([(keys[(i + j) % len(keys)], offset_value(OffsetValue(i + j, "", 1_700_000_000_000)),
                                  1_700_000_000_000) for j in range(50)])
            plog.append(batch)
            written += len(batch)
            records += 50
            i += 50
            if i % 50_000 == 0:
                await plog.flush()
        await durable.close()
        return records, written

    return asyncio.run(go())


def measure_load(root: str) -> tuple[float, int, int]:
    from coordinator.groups.settings import GroupSettings
    from coordinator.runtime.durable_log import DurableLog
    from coordinator.runtime.group_coordinator import GroupCoordinator
    from coordinator.runtime.loader import load_shard
    from coordinator.runtime.timers import FakeScheduler

    async def go() -> tuple[float, int, int]:
        durable = DurableLog(root)
        coordinator = GroupCoordinator(GroupSettings(), FakeScheduler(), durable, owned=[0])
        [shard] = coordinator.owned_shards()
        durable.open_partition(0)
        started = time.perf_counter()
        stats = await load_shard(shard, durable, None)
        elapsed = time.perf_counter() - started
        await durable.close()
        return elapsed, stats["log_records"], stats["offsets"]

    return asyncio.run(go())


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("bench.bench_offsets", __doc__, timed=True)
    parser.add_argument("--load-mb", type=int, default=256)
    args = parser.parse_args(argv)
    names = server_names(args)
    facts = machine_facts()
    failures: list[str] = []

    def workload_for(_name: str, mode: Mode) -> Workload:
        return commit_workload(seconds_of(args, mode), mode)

    with servers(names, failures, topics={TOPIC: PARTITIONS}) as endpoints:
        commits = interleaved(endpoints, args.reps, workload_for, failures)
    commit_table = "\n\n".join(
        f"{mode.label}, partition-offsets/s (requests/s x {PARTITIONS}):\n\n"
        + markdown_table(summary_header("partition-offsets/s"), summary_rows(commits[mode.key], PARTITIONS))
        for mode in MODES)
    print(commit_table)

    root = tempfile.mkdtemp(prefix="bench-offsets-load-")
    try:
        started = time.perf_counter()
        records, size = write_offsets_partition(root, args.load_mb)
        generated = time.perf_counter() - started
        loads = [measure_load(root) for _ in range(max(1, min(args.reps, 3)))]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    elapsed = median([t for t, _r, _o in loads])
    load_line = (f"{size / 2**20:,.0f} MB partition, {records:,} records ({loads[0][2]:,} live offsets), "
                 f"generated in {generated:.1f} s; load (median of {len(loads)}): {elapsed:.2f} s = "
                 f"**{records / elapsed:,.0f} records/s**, {size / 2**20 / elapsed:,.1f} MB/s")
    print(load_line)
    load_size = '1 GB' if args.load_mb >= 1024 else \
        f'{args.load_mb} MB, not 1 GB: a 1 GB file takes too long to generate on this VM'
    body = (f"Durable OffsetCommit, 1 topic x 10 partitions per request, {args.reps} interleaved reps "
            f"(rep, batching, server; ours: fsync group commit on):\n\n{commit_table}\n\n"
            f"Offsets-log load rate ({load_size}): "
            f"{load_line}\n")
    if failures:
        body += "\nFailures: " + "; ".join(failures) + "\n"
    figures = {f"commits_{m.key}": medians(commits[m.key], PARTITIONS) for m in MODES}
    figures["load_records_per_s"] = {"ours": records / elapsed}
    if not args.no_docs:
        write_section("offsets", "Offsets: durable OffsetCommit and load rate",
                      f".venv/bin/python -m bench.bench_offsets --reps {args.reps} --seconds {args.seconds:g} "
                      f"--single-seconds {args.single_seconds:g} --load-mb {args.load_mb}", facts, body, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
