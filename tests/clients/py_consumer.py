"""A group consumer on one of the Python clients, run as a subprocess by the conformance harness.

    python tests/clients/py_consumer.py {kafka-python|aiokafka|confluent} --bootstrap H:P --group G
        --topic T [--instance-id I] [--count N] [--commit explicit|auto|none] [--assignor NAME]
        [--session-timeout-ms N] [--set key=value ...]

A subprocess rather than a thread so the test can SIGKILL it (no LeaveGroup, no final commit)
exactly like a crashed application. It uses the client's defaults except the flags, prints the
line protocol of docs/CLIENTS.md on stdout, and on SIGTERM commits what it consumed (explicit
mode), closes the consumer (LeaveGroup) and prints "closed".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import threading
import time


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def pairs(tps) -> list[list]:
    return sorted([tp.topic, tp.partition] for tp in tps)


def parse_value(text: str):
    """--set values: JSON when they parse (numbers, booleans), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


ASSIGNORS = {  # generic name -> module.Class under <package>.coordinator.assignors
    "range": "range.RangePartitionAssignor",
    "roundrobin": "roundrobin.RoundRobinPartitionAssignor",
    "sticky": "sticky.sticky_assignor.StickyPartitionAssignor",
    "cooperative-sticky": "cooperative_sticky.CooperativeStickyAssignor",  # kafka-python only
}


def load_assignor(package: str, name: str):
    """The assignor class of kafka-python or aiokafka for a generic assignor name."""
    import importlib

    module, _, cls = ASSIGNORS[name].rpartition(".")
    return getattr(importlib.import_module(f"{package}.coordinator.assignors.{module}"), cls)


class Tracker:
    """The member's current assignment and the offsets consumed but not yet committed."""

    def __init__(self) -> None:
        self.owned: set[tuple[str, int]] = set()
        self.pending: dict[tuple[str, int], int] = {}
        self.seen = 0

    def assigned(self, tps) -> None:
        self.owned |= {(tp.topic, tp.partition) for tp in tps}
        emit("assigned", partitions=pairs(tps), assignment=sorted(map(list, self.owned)))

    def revoked(self, tps, lost: bool = False) -> None:
        gone = {(tp.topic, tp.partition) for tp in tps}
        self.owned -= gone
        if lost:
            for tp in gone:
                self.pending.pop(tp, None)
        emit("revoked", partitions=pairs(tps), assignment=sorted(map(list, self.owned)), lost=lost)

    def record(self, topic: str, partition: int, offset: int, value: bytes | None) -> None:
        emit("record", topic=topic, partition=partition, offset=offset,
             value=None if value is None else value.decode("utf-8", "replace"))
        self.pending[(topic, partition)] = offset + 1
        self.seen += 1

    def take_pending(self) -> dict[tuple[str, int], int]:
        pending, self.pending = self.pending, {}
        return pending

    @staticmethod
    def committed(offsets: dict[tuple[str, int], int]) -> None:
        emit("committed", offsets=sorted([t, p, o] for (t, p), o in offsets.items()))


# ----------------------------------------------------------------- confluent-kafka (librdkafka)
def run_confluent(args, stop: threading.Event) -> None:
    from confluent_kafka import Consumer, TopicPartition

    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "auto.offset.reset": "earliest",
            "enable.auto.commit": args.commit == "auto", **args.extra}
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    if args.assignor:
        conf["partition.assignment.strategy"] = args.assignor
    if args.session_timeout_ms:
        conf["session.timeout.ms"] = args.session_timeout_ms
    consumer = Consumer(conf)
    track = Tracker()

    def commit() -> None:
        pending = track.take_pending()
        if args.commit == "explicit" and pending:
            consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in pending.items()], asynchronous=False)
            track.committed(pending)

    def on_assign(_c, tps) -> None:  # the library (incrementally) assigns them after the callback
        track.assigned(tps)

    def on_revoke(c, tps) -> None:
        commit()
        track.revoked(tps)

    consumer.subscribe(args.topic, on_assign=on_assign, on_revoke=on_revoke,
                       on_lost=lambda c, tps: track.revoked(tps, lost=True))
    emit("started", client="confluent")
    try:
        while not stop.is_set() and (args.count < 0 or track.seen < args.count):
            for msg in consumer.consume(500, 0.2):
                if msg.error():
                    emit("error", message=str(msg.error()))
                    continue
                track.record(msg.topic(), msg.partition(), msg.offset(), msg.value())
                if 0 <= args.count <= track.seen:
                    break
            commit()
    finally:
        try:
            commit()
        finally:
            consumer.close()


# ----------------------------------------------------------------- kafka-python
def run_kafka_python(args, stop: threading.Event) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    conf = {"bootstrap_servers": args.bootstrap, "group_id": args.group, "auto_offset_reset": "earliest",
            "enable_auto_commit": args.commit == "auto", **args.extra}
    if args.instance_id:
        conf["group_instance_id"] = args.instance_id
    if args.assignor:
        conf["partition_assignment_strategy"] = [load_assignor("kafka", args.assignor)]
    if args.session_timeout_ms:
        conf["session_timeout_ms"] = args.session_timeout_ms
    consumer = KafkaConsumer(**conf)
    track = Tracker()

    def commit() -> None:
        pending = track.take_pending()
        if args.commit == "explicit" and pending:
            from kafka import TopicPartition
            consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in pending.items()})
            track.committed(pending)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            commit()
            track.revoked(revoked)

        def on_partitions_assigned(self, assigned):
            track.assigned(assigned)

    consumer.subscribe(topics=args.topic, listener=Listener())
    # kafka-python 3.0.12 can hang for good in a rejoin that its leader starts because the topics' metadata
    # changed: once it has made the assignment its need_rejoin() is False, and if poll()'s timer runs out before
    # the SyncGroup answer, the next poll() never collects the finished join (no assignment, no heartbeats; the
    # server expires the member). Its first leader made an empty assignment whenever the subscribed topics'
    # metadata came after the JoinGroup answer (its bootstrap Metadata names no topic), so the next generation was
    # such a rejoin. Fetched first (blocking), the metadata is there when the first leader assigns.
    for topic in args.topic:
        consumer.partitions_for_topic(topic)
    emit("started", client="kafka-python")
    try:
        while not stop.is_set() and (args.count < 0 or track.seen < args.count):
            for tp, records in consumer.poll(timeout_ms=200).items():
                for record in records:
                    if 0 <= args.count <= track.seen:
                        break
                    track.record(tp.topic, tp.partition, record.offset, record.value)
            commit()
    finally:
        try:
            commit()
        finally:
            consumer.close()


# ----------------------------------------------------------------- aiokafka
def run_aiokafka(args, stop: threading.Event) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

    async def main() -> None:
        conf = {"bootstrap_servers": args.bootstrap, "group_id": args.group, "auto_offset_reset": "earliest",
                "enable_auto_commit": args.commit == "auto", **args.extra}
        if "ssl_cafile" in conf:  # aiokafka takes TLS settings only as an SSLContext
            from aiokafka.helpers import create_ssl_context

            conf["ssl_context"] = create_ssl_context(cafile=conf.pop("ssl_cafile"))
        if args.instance_id:
            conf["group_instance_id"] = args.instance_id
        if args.assignor:
            conf["partition_assignment_strategy"] = [load_assignor("aiokafka", args.assignor)]
        if args.session_timeout_ms:
            conf["session_timeout_ms"] = args.session_timeout_ms
        consumer = AIOKafkaConsumer(**conf)
        track = Tracker()

        async def commit() -> None:
            pending = track.take_pending()
            if args.commit == "explicit" and pending:
                await consumer.commit({TopicPartition(t, p): o for (t, p), o in pending.items()})
                track.committed(pending)

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                await commit()
                track.revoked(revoked)

            async def on_partitions_assigned(self, assigned):
                track.assigned(assigned)

        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, done.set)
        loop.add_signal_handler(signal.SIGINT, done.set)
        consumer.subscribe(topics=args.topic, listener=Listener())
        await consumer.start()
        emit("started", client="aiokafka")
        try:
            while not done.is_set() and (args.count < 0 or track.seen < args.count):
                batches = await consumer.getmany(timeout_ms=200)
                for tp, records in batches.items():
                    for record in records:
                        if 0 <= args.count <= track.seen:
                            break
                        track.record(tp.topic, tp.partition, record.offset, record.value)
                await commit()
        finally:
            try:
                await commit()
            finally:
                await consumer.stop()

    asyncio.run(main())


RUNNERS = {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("client", choices=sorted(RUNNERS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", action="append", required=True)
    parser.add_argument("--instance-id")
    parser.add_argument("--count", type=int, default=-1)
    parser.add_argument("--commit", choices=("explicit", "auto", "none"), default="explicit")
    parser.add_argument("--assignor")
    parser.add_argument("--session-timeout-ms", type=int)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    args.extra = {k: parse_value(v) for k, _, v in (s.partition("=") for s in args.set)}
    # The client's own story (coordinator lost and found, retries) on stderr, for a failing test's message;
    # confluent's librdkafka logs there by itself.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.Formatter.converter = time.gmtime
    stop = threading.Event()
    if args.client != "aiokafka":  # aiokafka installs its own handlers on the event loop
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        RUNNERS[args.client](args, stop)
    except Exception as exc:  # reported on the protocol too, so the test's failure message shows it
        emit("error", message=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        emit("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
