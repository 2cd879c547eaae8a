"""Online migration between the protocols with real clients (confluent-kafka / librdkafka): two classic members
(group.protocol=classic, cooperative-sticky) consume a topic; once they are Stable, a member with
group.protocol=consumer joins (the group is upgraded to a KIP-848 consumer group, the classic members stay in it)
and later leaves (the group is downgraded back to a classic group). Records keep flowing throughout: every one is
consumed exactly once, and no partition is ever owned by two members at once."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer

from tests.support.server_process import start_server

TOPIC, GROUP, PARTITIONS = "migrating", "migrating-group", 6


class Owners:
    """Who owns which partition, from the members' own assign/revoke callbacks; a partition handed to a member
    while another still owns it is recorded as a conflict."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: dict[int, str] = {}
        self.conflicts: list[tuple[int, str, str]] = []
        self.assigned: dict[str, set[int]] = {}

    def assign(self, name: str, partitions: list[int]) -> None:
        with self.lock:
            for p in partitions:
                held = self.owner.get(p)
                if held is not None and held != name:
                    self.conflicts.append((p, held, name))
                self.owner[p] = name
                self.assigned.setdefault(name, set()).add(p)

    def revoke(self, name: str, partitions: list[int]) -> None:
        with self.lock:
            for p in partitions:
                if self.owner.get(p) == name:
                    del self.owner[p]


def member(bootstrap: str, name: str, protocol: str, seconds: float, owners: Owners, seen: dict,
           errors: list) -> None:
    config = {"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": protocol,
              "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if protocol == "classic":
        config["partition.assignment.strategy"] = "cooperative-sticky"
    consumer = Consumer(config)
    consumer.subscribe([TOPIC], on_assign=lambda _c, tps: owners.assign(name, [tp.partition for tp in tps]),
                       on_revoke=lambda _c, tps: owners.revoke(name, [tp.partition for tp in tps]))
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            message = consumer.poll(0.3)
            if message is None:
                continue
            if message.error():
                errors.append((name, str(message.error())))
                continue
            seen.setdefault(message.value(), []).append(name)
            consumer.commit(message, asynchronous=False)  # processed, then committed: nothing twice
    except Exception as exc:  # reported by the test
        errors.append((name, repr(exc)))
    finally:
        consumer.close()


def test_classic_members_upgraded_by_a_consumer_member_and_downgraded_when_it_leaves(tmp_path):
    server = start_server(str(tmp_path / "data"), topics={TOPIC: PARTITIONS})
    try:
        producer = Producer({"bootstrap.servers": server.bootstrap})
        owners, seen, errors = Owners(), {}, []
        threads = [threading.Thread(target=member, args=(server.bootstrap, "classic-1", "classic", 36, owners, seen,
                                                         errors)),
                   threading.Thread(target=member, args=(server.bootstrap, "classic-2", "classic", 36, owners, seen,
                                                         errors))]
        for thread in threads:
            thread.start()
        newcomer = threading.Thread(target=member, args=(server.bootstrap, "consumer-1", "consumer", 14, owners,
                                                         seen, errors))
        started = time.monotonic()
        for i in range(1200):  # records keep coming through the upgrade and the downgrade
            producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS)
            if i % 60 == 59:
                producer.flush(10)
                time.sleep(1)
            if i == 300:
                # a group is upgraded only once its members hold assignments (Kafka refuses one whose members
                # never synced: their embedded protocol is empty): the classic group is Stable first
                deadline = time.monotonic() + 20
                while len(owners.owner) < PARTITIONS:
                    assert time.monotonic() < deadline, f"the classic members own only {owners.owner}"
                    time.sleep(0.1)
                newcomer.start()
        producer.flush(10)
        newcomer.join()
        for thread in threads:
            thread.join()
        assert time.monotonic() - started < 60
        upgraded = server.wait_for_event("converted the classic group to a consumer group", group=GROUP)
        downgraded = server.wait_for_event("converted the consumer group to a classic group", group=GROUP)
        assert upgraded["timestamp"] < downgraded["timestamp"]
        assert errors == []
        assert owners.conflicts == []
        assert owners.assigned.get("consumer-1"), "the consumer-protocol member never got a partition"
        assert sorted(int(v) for v in seen) == list(range(1200))
        assert [v for v, names in seen.items() if len(names) > 1] == []
    finally:
        server.stop()
