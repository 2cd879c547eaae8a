"""PgPartitionLog micro-benchmarks (not a test): durable appends through PostgreSQL, the insert
statement's shape, and opening (copying rows into the replica).

    .venv/bin/python -m bench.pg_log_append [--url postgresql://...] [--seconds 3] [--inflight 64]
        [--compare-insert] [--open-batches 100000]

Without --url a throwaway PostgreSQL is started (tests/support/postgres.py). Default run: ``inflight``
writers each append one single-record (OffsetCommit-sized) batch and await ``durable``, again and
again: prints appends/s, p50/p99 latency and rows per transaction (the group commit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
import uuid

from storage.batch import build_batch
from storage.pg import batches, ownership
from storage.pg.batches import BatchRow
from storage.pg.connect import open_pool
from storage.pg.pg_log import PgPartitionLog

KEY = b"\x00\x01" + b"g" * 20 + b"topic-name-xx" + b"\x00\x00\x00\x07"  # ~40 B, like OffsetCommitKey
VALUE = b"\x00\x03" + b"\x00" * 8 + b"\xff\xff\xff\xff" + b"\x00\x00" + b"\x00" * 16  # ~32 B
EPOCH = 1


async def fresh_partition(pool) -> uuid.UUID:
    topic_id = uuid.uuid4()
    await ownership.ensure_partitions(pool, topic_id, 1)
    await pool.execute("UPDATE kc_partitions SET epoch = $2 WHERE topic_id = $1", topic_id, EPOCH)
    return topic_id


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


async def pipelined(pool, seconds: float, inflight: int, scratch: str) -> None:
    plog = await PgPartitionLog.open(pool, await fresh_partition(pool), 0, EPOCH, scratch)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def writer() -> None:
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            await plog.append(build_batch([(KEY, VALUE, 1_700_000_000_000)]))
            latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(inflight)))
    elapsed = time.perf_counter() - t0
    await plog.close()
    latencies.sort()
    print(f"pipelined appends ({inflight} in flight): {len(latencies) / elapsed:,.0f} appends/s, "
          f"p50 {percentile(latencies, 0.5) * 1000:.2f} ms, p99 {percentile(latencies, 0.99) * 1000:.2f} ms, "
          f"{len(latencies) / max(plog.transactions, 1):.1f} rows/transaction")


async def executemany_append(conn, topic_id, partition, epoch, rows) -> None:
    """The alternative shape: BEGIN; SELECT ... FOR SHARE; executemany(INSERT); COMMIT."""
    async with conn.transaction():
        await batches.check_epoch(conn, topic_id, partition, epoch)
        await conn.executemany("INSERT INTO kc_batches (topic_id, partition, base_offset, last_offset, max_timestamp, "
                               "data) VALUES ($1, $2, $3, $4, $5, $6)", [(topic_id, partition, *r) for r in rows])


async def compare_insert(pool, seconds: float) -> None:
    data = build_batch([(KEY, VALUE, 1_700_000_000_000)])
    for group in (1, 100):
        for name, statement in (("unnest, one statement", batches.append), ("executemany in BEGIN/COMMIT",
                                                                             executemany_append)):
            topic_id = await fresh_partition(pool)
            offset, commits, durations = 0, 0, []
            deadline = time.perf_counter() + seconds / 4
            async with pool.acquire() as conn:
                while time.perf_counter() < deadline:
                    rows = [BatchRow(offset + i, offset + i, 0, data) for i in range(group)]
                    t0 = time.perf_counter()
                    await statement(conn, topic_id, 0, EPOCH, rows)
                    durations.append(time.perf_counter() - t0)
                    offset += group
                    commits += 1
            durations.sort()
            print(f"{group:>3} rows/commit, {name:<28}: {commits / sum(durations):,.0f} commits/s, "
                  f"{commits * group / sum(durations):,.0f} rows/s, p50 {statistics.median(durations) * 1000:.2f} ms")


async def open_speed(pool, count: int, scratch: str) -> None:
    topic_id = await fresh_partition(pool)
    data = build_batch([(KEY, VALUE, 1_700_000_000_000)])
    async with pool.acquire() as conn:
        for start in range(0, count, 5000):
            rows = [BatchRow(o, o, 0, data) for o in range(start, min(count, start + 5000))]
            await batches.append(conn, topic_id, 0, EPOCH, rows)
    t0 = time.perf_counter()
    plog = await PgPartitionLog.open(pool, topic_id, 0, EPOCH, scratch)
    elapsed = time.perf_counter() - t0
    assert plog.log_end_offset == count
    await plog.close()
    print(f"open: {count:,} batches ({count * len(data) / 2**20:.1f} MiB) copied into the replica in "
          f"{elapsed:.2f} s ({count / elapsed:,.0f} batches/s)")


async def main(args: argparse.Namespace, url: str) -> None:
    pool = await open_pool(url, max_size=8)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            await pipelined(pool, args.seconds, args.inflight, scratch + "/a")
            if args.compare_insert:
                await compare_insert(pool, args.seconds)
            if args.open_batches:
                await open_speed(pool, args.open_batches, scratch + "/b")
    finally:
        await pool.close()


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--compare-insert", action="store_true")
    parser.add_argument("--open-batches", type=int, default=0)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        url = args.url
        if not url:
            from tests.support.postgres import PostgresServer

            url = stack.enter_context(PostgresServer()).url
        asyncio.run(main(args, url))


if __name__ == "__main__":
    cli()
