"""Produce and fetch throughput of the embedded data plane through a real client (not a test).

Starts our server (bench/lib/peers.py, unpinned) on a fresh log dir per run with a 3-partition
topic, produces N messages of S bytes with confluent-kafka (librdkafka), then reads them all back
with an assign()-consumer. Prints a table of records/s and MB/s
(payload bytes) and, with --write, stores it in docs/BENCHMARKS.md under
`produce_fetch`.

    .venv/bin/python -m bench.bench_produce_fetch [--messages 200000] [--size 100] [--write]
"""

from __future__ import annotations

import argparse
import os
import time

from bench.lib.peers import start_server
from bench.lib.report import machine_facts, markdown_table, write_section

PARTITIONS = 3

SCENARIOS = [
    # name, server overrides, producer config
    ("defaults (acks=all, linger 5 ms)", {}, {}),
    ("batching (linger 50 ms, batch 1 MB)", {}, {"linger.ms": 50, "batch.size": 1_000_000}),
    ("batching + lz4", {}, {"linger.ms": 50, "batch.size": 1_000_000, "compression.type": "lz4"}),
    ("batching, acks=1", {}, {"linger.ms": 50, "batch.size": 1_000_000, "acks": 1}),
    ("batching, log.flush.policy=none", {"log.flush.policy": "none"}, {"linger.ms": 50, "batch.size": 1_000_000}),
]


def produce(bootstrap: str, topic: str, count: int, payload: bytes, conf: dict) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **conf})
    failures = []

    def report(err, _msg) -> None:
        if err is not None:
            failures.append(err)

    started = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, payload, partition=i % PARTITIONS, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - started
    if remaining or failures:
        raise RuntimeError(f"{remaining} undelivered, {len(failures)} failed: {failures[:3]}")
    return elapsed


def fetch(bootstrap: str, topic: str, count: int) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-assign-only",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    started = time.perf_counter()
    seen = 0
    deadline = started + 120
    while seen < count and time.perf_counter() < deadline:
        for msg in consumer.consume(10_000, 0.5):
            if msg.error() is None:
                seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    if seen < count:
        raise RuntimeError(f"fetched {seen} of {count}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100, help="payload bytes per message")
    parser.add_argument("--write", action="store_true", help="store the table in docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    payload = os.urandom(args.size)
    mb = args.messages * args.size / 1e6
    rows = []
    fetched = False
    for index, (name, overrides, conf) in enumerate(SCENARIOS):
        topic = f"bench-{index}"
        with start_server("ours", cpu=None, topics={topic: PARTITIONS}, overrides=overrides) as server:
            produce_s = produce(server.address, topic, args.messages, payload, conf)
            rows.append([f"produce: {name}", f"{args.messages / produce_s:,.0f}", f"{mb / produce_s:.1f}",
                         f"{produce_s:.2f}"])
            print(*rows[-1], sep=" | ", flush=True)
            if not fetched:
                fetch_s = fetch(server.address, topic, args.messages)
                rows.append(["fetch: consumer defaults, assign() 3 partitions", f"{args.messages / fetch_s:,.0f}",
                             f"{mb / fetch_s:.1f}", f"{fetch_s:.2f}"])
                print(*rows[-1], sep=" | ", flush=True)
                fetched = True
    header = ["run", "records/s", "MB/s (payload)", "seconds"]
    table = markdown_table(header, rows)
    print(table)
    if args.write:
        body = (f"{table}\n\n{args.messages:,} messages of {args.size} B to a 3-partition topic "
                "(message i to partition i % 3), one confluent-kafka (librdkafka) client in the same "
                "machine, server on defaults (log.flush.policy=fsync: acks=all answers after fsync) "
                "unless the row says otherwise. Produce time runs from the first produce() to the end "
                "of flush(); fetch time from assign() until every message was consumed. Client and server "
                "share the machine (2 cores, also busy with other work), and the client's own Python loop "
                "(one produce() / one message object per record) is a large share of the cost: read these "
                "as end-to-end figures for one Python client, not as the server's limit; runs vary by "
                "about 2x with machine load.")
        write_section("produce_fetch", "Data plane: produce and fetch through confluent-kafka "
                      "(bench/bench_produce_fetch.py)", ".venv/bin/python -m bench.bench_produce_fetch --write",
                      machine_facts(), body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
