"""Transactions per second through a real transactional producer (not a test).

One confluent-kafka (librdkafka) producer with a transactional.id writes to a 10-partition topic: each
transaction is begin, 100 records (10 per partition), commit (EndTxn: PrepareCommit written, a COMMIT
marker into each of the 10 partitions, CompleteCommit). Beside it, in the same run and alternating
(A B A B), the same producer without a transaction (idempotent, flush() after every 100 records): the cost
of the same records acknowledged in the same groups, so the difference is what transactions add. The
librdkafka mock cluster, which implements transactions, is measured too when it starts (a yardstick only:
it keeps everything in memory and writes no marker to disk). Prints the table; --write stores it in
docs/BENCHMARKS.md under `transactions`.

    .venv/bin/python -m bench.bench_transactions [--transactions 300] [--reps 2] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from bench.lib.peers import PeerError, start_server
from bench.lib.report import machine_facts, markdown_table, write_section

PARTITIONS = 10
RECORDS_PER_TXN = 100
TOPIC = "bench-txn"


def _produce_group(producer, payload: bytes) -> None:
    for i in range(RECORDS_PER_TXN):
        producer.produce(TOPIC, payload, partition=i % PARTITIONS)


def transactional(bootstrap: str, count: int, payload: bytes) -> float:
    """Seconds for `count` committed transactions of RECORDS_PER_TXN records."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4()}",
                         "linger.ms": 0})
    producer.init_transactions(30)
    producer.begin_transaction()  # warm: the first transaction adds the partitions and finds everything
    _produce_group(producer, payload)
    producer.commit_transaction(30)
    started = time.perf_counter()
    for _ in range(count):
        producer.begin_transaction()
        _produce_group(producer, payload)
        producer.commit_transaction(30)
    return time.perf_counter() - started


def idempotent(bootstrap: str, count: int, payload: bytes) -> float:
    """Seconds for `count` groups of RECORDS_PER_TXN records, each flushed (acknowledged) before the next."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
    _produce_group(producer, payload)
    producer.flush(30)
    started = time.perf_counter()
    for _ in range(count):
        _produce_group(producer, payload)
        if producer.flush(30):
            raise RuntimeError("records left undelivered")
    return time.perf_counter() - started


def measure(server: str, count: int, payload: bytes) -> tuple[float, float]:
    with start_server(server, cpu=None, topics={TOPIC: PARTITIONS}) as endpoint:
        return count / transactional(endpoint.address, count, payload), \
            count / idempotent(endpoint.address, count, payload)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=300)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--size", type=int, default=100, help="payload bytes per record")
    parser.add_argument("--write", action="store_true", help="store the table in docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    payload = b"x" * args.size
    runs: dict[str, list[tuple[float, float]]] = {"ours": [], "rdkafka-mock": []}
    for rep in range(args.reps):
        for server in runs:
            try:
                txn, plain = measure(server, args.transactions, payload)
            except PeerError as exc:
                print(f"{server}: not measured ({exc})")
                continue
            runs[server].append((txn, plain))
            print(f"rep {rep} {server}: {txn:,.0f} transactions/s, {plain:,.0f} flushed groups/s", flush=True)
    rows = []
    for server, found in runs.items():
        if found:
            txn = statistics.median(t for t, _ in found)
            plain = statistics.median(p for _, p in found)
            rows.append([server, f"{txn:,.0f}", f"{txn * RECORDS_PER_TXN:,.0f}", f"{plain:,.0f}",
                         f"{txn / plain:.2f}"])
    table = markdown_table(["server", "transactions/s", "records/s in transactions",
                            "idempotent groups of 100 flushed/s", "txn / idempotent"], rows)
    print(table)
    if args.write:
        body = (f"{table}\n\nMedians of {args.reps} runs, A B A B. Each transaction: {RECORDS_PER_TXN} records "
                f"of {args.size} B over {PARTITIONS} partitions, then commit_transaction() (EndTxn answered once "
                "PrepareCommit is durable; markers to the 10 partitions, CompleteCommit). The idempotent column "
                "is the same producer without a transaction, flush() after each 100 records. One "
                "confluent-kafka client on the same 2-core machine; server on defaults (fsync: PrepareCommit, the 10 "
                "markers and CompleteCommit are each made durable before the next step). EndTxn is answered once "
                "the transaction completed (bounded at 500 ms; Kafka answers at PrepareCommit): before that "
                "change a commit took ~28 ms, most of it the client's 20 ms back-off after "
                "CONCURRENT_TRANSACTIONS from its next AddPartitionsToTxn. The mock keeps everything in memory "
                "and writes no markers.")
        write_section("transactions", "Transactions: commits per second through confluent-kafka "
                      "(bench/bench_transactions.py)", ".venv/bin/python -m bench.bench_transactions --write",
                      machine_facts(), body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
