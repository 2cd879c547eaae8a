"""KIP-932 share groups with the client that has a share consumer: confluent-kafka 2.16's ShareConsumer (librdkafka's
share consumer). Java's KafkaShareConsumer arrived in kafka-clients 4.0 (GA in 4.2) and the harness's jar is
3.9.1; kafka-python, aiokafka, kafkajs and kcat have none: n/a in docs/COMPATIBILITY.md.

Three share consumers of one group read ONE partition: every record is delivered once and acknowledged (implicit
acknowledgement); a record RELEASEd comes back with delivery count 2; the server is SIGKILLed and restarted on the
same log dir: nothing acknowledged is delivered again (tests/integration/test_share_consumer.py has the rest)."""

from __future__ import annotations

import threading

from confluent_kafka import AcknowledgeType

from tests.clients import compat
from tests.clients.drivers import CLIENTS as ALL_CLIENTS
from tests.clients.our_server import RestartableServer
from tests.clients.produce import create_topic
from tests.support.share_clients import FAST_SHARE, joined, poll_until, produce, share_consumer

NO_SHARE_CONSUMER = {
    "java": "kafka-clients 3.9.1 (the harness's jar) has no KafkaShareConsumer (4.0 early access, 4.2 GA)",
}
for _other in sorted(set(ALL_CLIENTS) - {"confluent"}):
    compat.mark(_other, ("share-group",), "n/a",
                NO_SHARE_CONSUMER.get(_other, "the client has no share consumer (KIP-932)"))


def test_confluent_share_consumers_share_one_partition(tmp_path):
    server = RestartableServer(str(tmp_path / "data"), FAST_SHARE)
    consumers = []
    try:
        with compat.record("confluent", "share-group"):
            create_topic(server.bootstrap, "queue", 1)
            consumers = [share_consumer(server.bootstrap, "sg", ["queue"], **{"max.poll.records": "5"})
                         for _ in range(3)]
            for c in consumers:
                joined(c)
            produce(server.bootstrap, "queue", [f"m{i}".encode() for i in range(60)], per_batch=5)
            seen: dict[int, list[int]] = {i: [] for i in range(3)}
            stop = threading.Event()

            def run(i: int) -> None:
                while not stop.is_set() and sum(map(len, seen.values())) < 60:
                    seen[i] += [m.offset() for m in consumers[i].poll(0.3) or [] if m.error() is None]

            threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            stop.set()
            assert sorted(o for got in seen.values() for o in got) == list(range(60))  # each once, one consumer
            for c in consumers:
                c.commit_sync()  # the implicit acknowledgements of the last poll, durable
                c.close()
            consumers = []

            explicit = share_consumer(server.bootstrap, "sg", ["queue"], **{"share.acknowledgement.mode": "explicit"})
            consumers = [explicit]
            produce(server.bootstrap, "queue", [b"again"])
            [first] = poll_until(explicit, lambda got: len(got) >= 1)
            assert (first.offset(), first.delivery_count()) == (60, 1)
            explicit.acknowledge(first, AcknowledgeType.RELEASE)
            [second] = poll_until(explicit, lambda got: len(got) >= 1)
            assert (second.offset(), second.delivery_count()) == (60, 2)
            explicit.acknowledge(second, AcknowledgeType.ACCEPT)
            explicit.commit_sync()
            explicit.close()
            consumers = []

            server.crash_and_restart()
            produce(server.bootstrap, "queue", [b"after"])
            after = share_consumer(server.bootstrap, "sg", ["queue"])
            consumers = [after]
            got = poll_until(after, lambda got: len(got) >= 1, timeout=40)
            assert [m.offset() for m in got] == [61]  # nothing acknowledged comes back
    finally:
        for c in consumers:
            c.close()
        code = server.close()
    assert code == 0, f"server exited with {code}; log tail:\n  {server.tail()}"
