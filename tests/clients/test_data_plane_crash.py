"""Kill -9 while acks=-1 producers run: every acknowledged message survives, at its offset.

A few rounds of: start the server on the same log.dirs, produce continuously with a
confluent-kafka idempotent producer (acks=all), SIGKILL the server at a random moment.
Then restart once more: the logs must open cleanly (every offset readable in order)
and every message whose delivery was acknowledged must be at its reported offset.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic

from tests.support.data_plane_clients import consume_confluent, create_topic
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration
PARTITIONS = 3
WARM_UP_SECONDS = 20


def produce_until_killed(server, topic: str, acked: dict, round_no: int, kill_after: float) -> None:
    """Produce flat out; SIGKILL the server `kill_after` seconds after the round's first acknowledgement.

    The kill clock starts at the first acknowledgement, not at producer creation: an idempotent
    producer needs ApiVersions, Metadata and InitProducerId first, and on a slow CI machine that
    warm-up alone can outlast a fixed kill delay, leaving a round with nothing acknowledged.
    """
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 2, "message.timeout.ms": 3000, "reconnect.backoff.max.ms": 200})
    before = len(acked)

    def report(err, msg) -> None:
        if err is None:
            acked[(msg.partition(), msg.offset())] = msg.value()

    killer = threading.Timer(kill_after, server.kill)
    warm_up_deadline = time.monotonic() + WARM_UP_SECONDS
    deadline = None
    i = 0
    while deadline is None or time.monotonic() < deadline:
        try:
            producer.produce(topic, value=b"r%d-%d" % (round_no, i), partition=i % PARTITIONS, on_delivery=report)
            i += 1
        except BufferError:
            pass
        producer.poll(0.001 if i % 200 == 0 else 0)
        if deadline is None:
            if len(acked) > before:
                killer.start()
                deadline = time.monotonic() + kill_after + 0.5
            elif time.monotonic() > warm_up_deadline:
                server.kill()
                raise AssertionError(f"round {round_no}: nothing acknowledged within {WARM_UP_SECONDS} s")
    killer.join()
    producer.flush(1)  # deliveries in flight at the kill fail or stay unacknowledged
    producer.purge()
    producer.flush(0)


def latest_offsets(server, topic: str) -> dict[int, int]:
    with WireClient(server.host, server.port) as client:
        response = client.call(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(ListOffsetsTopic(
            name=topic, partitions=tuple(ListOffsetsPartition(partition_index=p, timestamp=-1)
                                         for p in range(PARTITIONS))),)))
    return {p.partition_index: p.offset for p in response.topics[0].partitions}


def test_acknowledged_writes_survive_kill_9(server_factory, tmp_path):
    log_dir = str(tmp_path / "data")
    rng = random.Random(20240611)
    acked: dict[tuple[int, int], bytes] = {}
    first = server_factory(log_dir=log_dir)
    create_topic(first, "crash", PARTITIONS)
    server = first
    for round_no in range(4):
        if round_no:
            server = server_factory(log_dir=log_dir)
        produce_until_killed(server, "crash", acked, round_no, kill_after=rng.uniform(0.2, 0.7))
        assert server.process.poll() is not None  # it really died
    assert len(acked) > 1000, "too few acknowledged messages to mean anything"

    final = server_factory(log_dir=log_dir)
    ends = latest_offsets(final, "crash")
    for p in range(PARTITIONS):
        assert ends[p] > max((o for (q, o) in acked if q == p), default=-1)
    got = consume_confluent(final.bootstrap, "crash", PARTITIONS, sum(ends.values()), timeout=30)
    for p in range(PARTITIONS):
        offsets = [o for o, _ in got[p]]
        assert offsets == list(range(ends[p])), f"partition {p} is not readable 0..{ends[p] - 1}"
    stored = {(p, o): v for p in got for o, v in got[p]}
    lost = [key for key, value in acked.items() if stored.get(key) != value]
    assert not lost, f"{len(lost)} acknowledged messages lost or changed, e.g. {lost[:5]}"
    assert not final.events("handler failed")
    assert final.stop() == 0
