"""Exactly-once scenarios for the transactional drivers (txn_drivers.py), on any server: our server
(test_transactions.py) and the librdkafka mock cluster (test_transactions_peers.py).

The truth they check is read independently of the drivers: the output topic read from the beginning by a
confluent-kafka consumer without a group, once read_committed and once read_uncommitted, and the group's committed
offsets by an OffsetFetch that does not join the group (produce.committed_offsets).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path

from tests.clients.process import ClientProcess, wait_all
from tests.clients.produce import committed_offsets, produce
from tests.clients.txn_drivers import committed_inputs, outputs_of, run_processor, transactions

PARTITIONS = 3
TIMEOUT = 120.0


def read_output(bootstrap: str, topic: str, isolation: str, expected: int,
                timeout: float = 60.0) -> dict[int, list[str]]:
    """Every value of `topic`, per partition in offset order, read with `isolation` (read_committed or
    read_uncommitted) until at least `expected` values came and every partition then reported its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                         "isolation.level": isolation, "enable.partition.eof": True, "enable.auto.commit": False})
    got: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.5):
                if msg.error() is None:
                    got[msg.partition()].append(msg.value().decode())
                    at_end.discard(msg.partition())
                elif msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                else:
                    raise AssertionError(f"reading {topic} ({isolation}): {msg.error()}")
            if sum(map(len, got.values())) >= expected and len(at_end) == PARTITIONS:
                break
    finally:
        consumer.close()
    return got


def expected_output(sent: dict[int, list[str]]) -> dict[int, list[str]]:
    return {p: ["x" + v for v in values] for p, values in sent.items()}


def merged(*rounds: dict[int, list[str]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    for sent in rounds:
        for p, values in sent.items():
            out[p].extend(values)
    return out


def wait_all_committed(processors: list[ClientProcess], running: list[ClientProcess],
                       sent: dict[int, list[str]], timeout: float = TIMEOUT) -> None:
    """The processors' committed transactions together hold every input record (at least once)."""
    want = {(p, o, v) for p, values in sent.items() for o, v in enumerate(values)}
    wait_all(running, lambda: want <= set(committed_inputs(processors)), timeout,
             f"committed transactions covering all {len(want)} input records")


def check_exactly_once(bootstrap: str, processors: list[ClientProcess], group: str, input_topic: str,
                       output_topic: str, sent: dict[int, list[str]], full_server: bool = True) -> dict[int, list[str]]:
    """read_committed output = each input record once, in order; no input committed twice by the processors;
    the group's committed offsets = the input's ends. Returns the read_uncommitted output.

    full_server=False for the librdkafka mock, which writes no transaction markers, answers no aborted
    transactions and keeps no transactional offsets (TxnOffsetCommit is answered, nothing is stored): there
    read_committed sees the aborted records too and OffsetFetch finds nothing, so only the drivers' side is checked."""
    total = sum(map(len, sent.values()))
    twice = {k: n for k, n in committed_inputs(processors).items() if n > 1}
    assert not twice, f"input records in more than one committed transaction: {sorted(twice)[:10]}"
    written = sum(outputs_of(processors, "commit", "abort", "failed").values())
    committed = read_output(bootstrap, output_topic, "read_committed", total if full_server else written)
    if full_server:
        assert committed == expected_output(sent), (
            f"read_committed output != each input once, in order: {_diff(committed, expected_output(sent))}\n"
            + "\n".join(p.describe() for p in processors))
    ends = {p: len(v) for p, v in sent.items()}
    offsets = committed_offsets(bootstrap, group, input_topic, PARTITIONS) if full_server else ends
    assert offsets == ends, f"group {group}: committed offsets {offsets}, the input ends at {ends}"
    return read_output(bootstrap, output_topic, "read_uncommitted", written)


def _diff(got: dict[int, list[str]], want: dict[int, list[str]]) -> str:
    g = Counter((p, v) for p, vs in got.items() for v in vs)
    w = Counter((p, v) for p, vs in want.items() for v in vs)
    return f"missing {sorted(w - g)[:10]}, extra {sorted(g - w)[:10]}, sizes {[len(v) for v in got.values()]}"


def stop_cleanly(processor: ClientProcess) -> None:
    code = processor.stop(60)
    assert code == 0 and processor.of("closed"), f"{processor.name} did not close cleanly (exit {code})\n" + \
        processor.describe()
    assert not processor.failures(), f"{processor.name} reported errors\n{processor.describe()}"


def aborts_and_exactly_once(client: str, bootstrap: str, names: dict[str, str], count: int = 90,
                            full_server: bool = True) -> None:
    """(a) `count` inputs through one processor that aborts every 3rd transaction (7 records at most each):
    read_committed output = every input once, in order; read_uncommitted = the committed AND the aborted
    transactions' records; the group's committed offsets = the input's ends."""
    sent = produce(bootstrap, names["input"], PARTITIONS, count)
    processor = run_processor(client, bootstrap, names["group"], names["input"], names["output"], names["txn"],
                              batch=7, abort_every=3)
    try:
        wait_all_committed([processor], [processor], sent)
        assert not transactions([processor], "failed"), processor.describe(events=30)
        aborted = outputs_of([processor], "abort")
        assert aborted, f"no transaction aborted\n{processor.describe()}"
        uncommitted = check_exactly_once(bootstrap, [processor], names["group"], names["input"], names["output"], sent,
                                         full_server)
        got = Counter((p, v) for p, vs in uncommitted.items() for v in vs)
        want = outputs_of([processor], "commit", "abort")
        assert got == want, ("read_uncommitted output != committed + aborted transactions' records: "
                             f"missing {sorted(want - got)[:10]}, extra {sorted(got - want)[:10]}")
        stop_cleanly(processor)
    finally:
        processor.kill()


def zombie_fenced(client: str, bootstrap: str, names: dict[str, str], release: Path, count: int = 60,
                  full_server: bool = True) -> None:
    """(b) A holds its 2nd transaction open; B starts with the same transactional id (and group): B's
    InitProducerId fences A, whose open transaction is aborted; released, A fails with ProducerFenced and stops;
    B processes the rest. read_committed output = every input once, in order; A's open transaction's records
    are only in the read_uncommitted output."""
    first = produce(bootstrap, names["input"], PARTITIONS, count // 2)
    args = (client, bootstrap, names["group"], names["input"], names["output"], names["txn"])
    a = run_processor(*args, batch=7, hold_at=2, release_file=str(release), name=f"{client}-A")
    b: ClientProcess | None = None
    try:
        a.wait_for("holding", TIMEOUT, n=2)
        b = run_processor(*args, batch=7, name=f"{client}-B")
        b.wait_for("ready", TIMEOUT)
        release.touch()
        a.wait_for("fenced", TIMEOUT)
        assert a.wait_exit(60) == 0, a.describe()
        assert [e["n"] for e in transactions([a], "commit")] == [1], a.describe(events=30)
        second = produce(bootstrap, names["input"], PARTITIONS, count - count // 2, start=count // 2)
        sent = merged(first, second)
        wait_all_committed([a, b], [b], sent)
        uncommitted = check_exactly_once(bootstrap, [a, b], names["group"], names["input"], names["output"], sent,
                                         full_server)
        in_ru = Counter((p, v) for p, vs in uncommitted.items() for v in vs)
        held = Counter((p, "x" + v) for p, _o, v in a.of("holding")[0]["records"])
        assert held and all(in_ru[k] >= 1 for k in held), f"the fenced transaction's records {held} not written"
        stop_cleanly(b)
    finally:
        a.kill()
        if b is not None:
            b.kill()

