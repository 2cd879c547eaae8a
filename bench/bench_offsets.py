"""Offsets benchmarks: durable OffsetCommit throughput against peers, and offsets-log load rate.

    .venv/bin/python -m bench.bench_offsets [--servers ours,tansu,noida-db,rdkafka-mock]
        [--reps 3] [--seconds 4] [--load-mb 256] [--no-write]

1. OffsetCommit partition-offsets/s: pre-encoded OffsetCommit v7 requests (generation -1, empty
   member id: commits outside group management), each 1 topic x 10 partitions, pipelined on 16
   connections with 32 in flight (one group per connection, so several offsets partitions take
   part), by bench.loadgen pinned to core 1; servers pinned to core 0. Ours runs with its defaults:
   fsync group commit on (an answer means the batch was fsync'ed). Servers are started together
   and measured interleaved, `--reps` times each; the table shows the median and the ratio to ours.
   Each run's first answer per connection must carry error code 0 for all 10 partitions.
2. Load rate: a script writes one __consumer_offsets partition of `--load-mb` MB (10 000 groups x
   10 topics x 8 partitions committed over and over, batches of 50 records as a busy server
   writes them), then the server's loader (coordinator.loader.load_shard) replays it; records/s
   and MB/s of the load, in-process on one core.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import struct
import tempfile
import time

from kio.schema.offset_commit.v7.request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                 OffsetCommitRequestTopic)
from kio.static.primitive import i32, i64

from bench.loadgen import Workload, encode, run
from bench.peers import NAMES, PeerError, start_server
from bench.run_all import machine_facts, markdown_table, median, write_section

SERVER_CPU, LOAD_CPU = 0, 1
TOPIC = "bench-offsets"
PARTITIONS = 10
CONNECTIONS = 16


def commit_frames(connection: int) -> list[bytes]:
    group = f"bench-offsets-{connection}"
    frames = []
    for i in range(64):
        request = OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=i32(-1), member_id="", group_instance_id=None,
            topics=(OffsetCommitRequestTopic(name=TOPIC, partitions=tuple(
                OffsetCommitRequestPartition(partition_index=i32(p), committed_offset=i64(1000 + i),
                                             committed_leader_epoch=i32(-1), committed_metadata="")
                for p in range(PARTITIONS))),))
        frames.append(encode(request, correlation_id=i + 1))
    return frames


def commit_check(body: bytes) -> None:
    """OffsetCommit v7 answer (header v0): correlation, throttle, topics[name, partitions[index, error]]."""
    pos = 8
    (topics,) = struct.unpack_from(">i", body, pos)
    pos += 4
    for _ in range(topics):
        (n,) = struct.unpack_from(">h", body, pos)
        pos += 2 + n
        (parts,) = struct.unpack_from(">i", body, pos)
        pos += 4
        for _ in range(parts):
            _index, code = struct.unpack_from(">ih", body, pos)
            pos += 6
            if code != 0:
                raise ValueError(f"OffsetCommit answered error code {code}")


def commit_workload(seconds: float) -> Workload:
    per_connection = [commit_frames(c) for c in range(CONNECTIONS)]
    return Workload(per_connection[0], connections=CONNECTIONS, in_flight=32, duration=seconds, warmup=1.0,
                    check=commit_check, frames_for=lambda c: per_connection[c % CONNECTIONS])


# --- load rate ---------------------------------------------------------------------------------

def write_offsets_partition(root: str, megabytes: int) -> tuple[int, int]:
    """Write one partition of about `megabytes` MB; returns (records, bytes)."""
    from coordinator.offsets_log import DurableLog
    from coordinator.record_codec import offset_key, offset_value
    from coordinator.records import OffsetValue
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
    from coordinator.loader import load_shard
    from coordinator.offsets_log import DurableLog
    from coordinator.shard import GroupCoordinator, GroupSettings
    from coordinator.timers import FakeScheduler

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
    parser = argparse.ArgumentParser(prog="python -m bench.bench_offsets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", default=",".join(NAMES))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--load-mb", type=int, default=256)
    parser.add_argument("--no-write", action="store_true", help="print only; do not touch docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    results: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    failures: list[str] = []
    workload = commit_workload(args.seconds)
    with contextlib.ExitStack() as stack:
        endpoints = {}
        for name in names:
            try:
                endpoints[name] = stack.enter_context(start_server(name, cpu=SERVER_CPU, topics={TOPIC: PARTITIONS}))
            except PeerError as exc:
                failures.append(f"{name}: did not start ({str(exc).splitlines()[0]})")
        for rep in range(args.reps):
            for name, endpoint in endpoints.items():
                try:
                    result = run(endpoint.host, endpoint.port, workload, cpu=LOAD_CPU, cpu_probe=endpoint.cpu_seconds)
                except RuntimeError as exc:
                    failures.append(f"{name} rep {rep + 1}: {exc}")
                    continue
                results[name].append(result.rps * PARTITIONS)
                cpu[name].append(result.server_cpu or 0.0)
                print(f"rep {rep + 1} {name}: {result.rps * PARTITIONS:,.0f} partition-offsets/s "
                      f"({result.rps:,.0f} requests/s, p50 {result.p50_us:.0f} us, server cpu "
                      f"{result.server_cpu or 0:.2f})", flush=True)
    ours = median(results["ours"]) if results.get("ours") else None
    rows = []
    for name in names:
        if not results[name]:
            rows.append([name, "failed", "", "", ""])
            continue
        m = median(results[name])
        rows.append([name, f"{m:,.0f}", f"{m / PARTITIONS:,.0f}", f"{median(cpu[name]):.2f}",
                     f"{m / ours:.2f}" if ours else ""])
    commit_table = markdown_table(["server", "partition-offsets/s (median)", "requests/s", "server CPU",
                                   "vs ours"], rows)
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
    body = (f"Durable OffsetCommit, 1 topic x 10 partitions per request, 16 connections x 32 in flight, "
            f"{args.seconds:g} s x {args.reps} interleaved reps (ours: fsync group commit on):\n\n{commit_table}\n\n"
            f"Offsets-log load rate ({'1 GB' if args.load_mb >= 1024 else f'{args.load_mb} MB, not 1 GB: a 1 GB file takes too long to generate on this VM'}): "
            f"{load_line}\n")
    if failures:
        body += "\nFailures: " + "; ".join(failures) + "\n"
    if not args.no_write:
        write_section("offsets", "Offsets: durable OffsetCommit and load rate",
                      f".venv/bin/python -m bench.bench_offsets --reps {args.reps} --seconds {args.seconds:g} "
                      f"--load-mb {args.load_mb}", machine_facts(), body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
