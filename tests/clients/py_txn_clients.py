"""The three Python clients' transactional consumer + producer pairs behind one interface, for py_txn.py
(the loop). Run as part of that script: imported by path, not as a package module."""

from __future__ import annotations

import json

Positions = dict[tuple[str, int], int]


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def parse_value(text: str):
    """--set values: JSON when they parse (numbers, booleans), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


class Fenced(Exception):
    """Another producer with the same transactional id is active: this one must stop."""


# ----------------------------------------------------------------- confluent-kafka (librdkafka)
class Confluent:
    name = "confluent"

    def __init__(self, args) -> None:
        from confluent_kafka import Consumer

        self.args = args
        self.consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "isolation.level": "read_committed", **args.extra})
        self.producer = None

    async def start(self, on_assign, on_revoke) -> None:
        self.consumer.subscribe([self.args.input], on_assign=lambda _c, tps: on_assign(tps),
                                on_revoke=lambda _c, tps: on_revoke(tps, False),
                                on_lost=lambda _c, tps: on_revoke(tps, True))
        await self.new_producer()

    async def new_producer(self) -> None:
        from confluent_kafka import Producer

        # metadata.recovery.strategy=none: librdkafka 2.16's re-bootstrap (when every broker was unreachable, as
        # during the crash test's restart) leaves the group coordinator's cached broker handle terminating for
        # ever, and send_offsets_to_transaction then never sends its TxnOffsetCommit, even past its timeout
        # (seen with debug=eos,protocol,broker: 25,000 "Handle is terminating in state TRY_CONNECT" lines)
        self.producer = Producer({"bootstrap.servers": self.args.bootstrap, "transactional.id": self.args.txn_id,
                                  "metadata.recovery.strategy": "none"})
        self.producer.init_transactions(60)

    async def poll(self) -> list[tuple[str, int, int, str]]:
        out = []
        for msg in self.consumer.consume(self.args.batch or 500, 0.2):
            if msg.error():
                emit("error", message=str(msg.error()))
            else:
                out.append((msg.topic(), msg.partition(), msg.offset(), msg.value().decode()))
        return out

    async def begin(self) -> None:
        self.producer.begin_transaction()

    async def send(self, partition: int, value: str) -> None:
        self.producer.produce(self.args.output, value=value.encode(), partition=partition)
        self.producer.poll(0)

    async def flush(self) -> None:
        self.producer.flush(60)

    async def send_offsets(self, positions: Positions) -> None:
        from confluent_kafka import TopicPartition

        self.producer.send_offsets_to_transaction([TopicPartition(t, p, o) for (t, p), o in positions.items()],
                                                  self.consumer.consumer_group_metadata(), 60)

    async def commit(self) -> None:
        self.producer.commit_transaction(60)

    async def abort(self) -> None:
        self.producer.abort_transaction(60)

    async def seek(self, positions: Positions) -> None:
        from confluent_kafka import TopicPartition

        for (t, p), o in positions.items():
            self.consumer.seek(TopicPartition(t, p, o))

    async def committed(self, owned) -> Positions:
        from confluent_kafka import TopicPartition

        tps = self.consumer.committed([TopicPartition(t, p) for t, p in owned], 30)
        return {(tp.topic, tp.partition): tp.offset for tp in tps if tp.offset >= 0}

    @staticmethod
    def classify(exc: BaseException) -> str:
        from confluent_kafka import KafkaError, KafkaException

        err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
        if not isinstance(err, KafkaError):
            return "fatal"
        if err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED):
            return "fenced"
        if err.fatal():
            return "fatal"
        return "retry" if err.retriable() else "abort"

    async def close_producer(self) -> None:
        self.producer, producer = None, self.producer
        if producer is not None:
            producer.flush(5)

    async def close(self) -> None:
        try:
            await self.close_producer()
        finally:
            self.consumer.close()


# ----------------------------------------------------------------- kafka-python
class KafkaPython(Confluent):
    name = "kafka-python"

    def __init__(self, args) -> None:
        from kafka import KafkaConsumer

        self.args = args
        self.consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group,
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      isolation_level="read_committed", **args.extra)
        self.producer = None

    async def start(self, on_assign, on_revoke) -> None:
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                on_revoke(revoked, False)

            def on_partitions_assigned(self, assigned):
                on_assign(assigned)

        self.consumer.subscribe(topics=[self.args.input], listener=Listener())
        self.consumer.partitions_for_topic(self.args.input)  # see py_consumer.py: metadata before the first join
        await self.new_producer()

    async def new_producer(self) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=self.args.bootstrap, transactional_id=self.args.txn_id)
        self.producer.init_transactions()

    async def poll(self) -> list[tuple[str, int, int, str]]:
        polled = self.consumer.poll(timeout_ms=200, max_records=self.args.batch or None)
        return [(tp.topic, tp.partition, r.offset, r.value.decode()) for tp, records in polled.items() for r in records]

    async def send(self, partition: int, value: str) -> None:
        self.producer.send(self.args.output, value=value.encode(), partition=partition)

    async def flush(self) -> None:
        self.producer.flush()

    async def send_offsets(self, positions: Positions) -> None:
        from kafka import OffsetAndMetadata, TopicPartition

        self.producer.send_offsets_to_transaction(
            {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in positions.items()},
            self.consumer.group_metadata())

    async def commit(self) -> None:
        self.producer.commit_transaction()

    async def abort(self) -> None:
        self.producer.abort_transaction()

    async def seek(self, positions: Positions) -> None:
        from kafka import TopicPartition

        for (t, p), o in positions.items():
            self.consumer.seek(TopicPartition(t, p), o)

    async def committed(self, owned) -> Positions:
        from kafka import TopicPartition

        out = {}
        for t, p in owned:
            offset = self.consumer.committed(TopicPartition(t, p))
            if offset is not None:
                out[(t, p)] = offset
        return out

    @staticmethod
    def classify(exc: BaseException) -> str:
        from kafka import errors

        if isinstance(exc, errors.ProducerFencedError | errors.InvalidProducerEpochError):  # an older epoch: fenced
            return "fenced"
        if isinstance(exc, errors.KafkaError) and getattr(exc, "retriable", False):
            return "retry"
        return "abort"

    async def close_producer(self) -> None:
        self.producer, producer = None, self.producer
        if producer is not None:
            producer.close(5)


# ----------------------------------------------------------------- aiokafka
class AioKafka(KafkaPython):
    name = "aiokafka"

    def __init__(self, args) -> None:
        self.args = args
        self.producer = None

    async def start(self, on_assign, on_revoke) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                on_revoke(revoked, False)

            async def on_partitions_assigned(self, assigned):
                on_assign(assigned)

        self.consumer = AIOKafkaConsumer(bootstrap_servers=self.args.bootstrap, group_id=self.args.group,
                                         auto_offset_reset="earliest", enable_auto_commit=False,
                                         isolation_level="read_committed", **self.args.extra)
        self.consumer.subscribe(topics=[self.args.input], listener=Listener())
        await self.consumer.start()
        await self.new_producer()

    async def new_producer(self) -> None:
        from aiokafka import AIOKafkaProducer

        self.producer = AIOKafkaProducer(bootstrap_servers=self.args.bootstrap, transactional_id=self.args.txn_id)
        await self.producer.start()  # InitProducerId

    async def poll(self) -> list[tuple[str, int, int, str]]:
        batches = await self.consumer.getmany(timeout_ms=200, max_records=self.args.batch or None)
        return [(tp.topic, tp.partition, r.offset, r.value.decode()) for tp, records in batches.items()
                for r in records]

    async def begin(self) -> None:
        await self.producer.begin_transaction()

    async def send(self, partition: int, value: str) -> None:
        await self.producer.send(self.args.output, value=value.encode(), partition=partition)

    async def flush(self) -> None:
        await self.producer.flush()

    async def send_offsets(self, positions: Positions) -> None:
        from aiokafka import TopicPartition

        # aiokafka takes the group id only (no generation / member id: TxnOffsetCommit without KIP-447 fencing)
        await self.producer.send_offsets_to_transaction(
            {TopicPartition(t, p): o for (t, p), o in positions.items()}, self.args.group)

    async def commit(self) -> None:
        await self.producer.commit_transaction()

    async def abort(self) -> None:
        await self.producer.abort_transaction()

    async def seek(self, positions: Positions) -> None:
        from aiokafka import TopicPartition

        for (t, p), o in positions.items():
            self.consumer.seek(TopicPartition(t, p), o)

    async def committed(self, owned) -> Positions:
        from aiokafka import TopicPartition

        out = {}
        for t, p in owned:
            offset = await self.consumer.committed(TopicPartition(t, p))
            if offset is not None:
                out[(t, p)] = offset
        return out

    @staticmethod
    def classify(exc: BaseException) -> str:
        from aiokafka import errors

        if isinstance(exc, errors.ProducerFenced | errors.InvalidProducerEpoch):  # an older epoch: fenced
            return "fenced"
        if isinstance(exc, errors.KafkaError) and getattr(exc, "retriable", False):
            return "retry"
        return "abort"

    async def close_producer(self) -> None:
        self.producer, producer = None, self.producer
        if producer is not None:
            await producer.stop()

    async def close(self) -> None:
        try:
            await self.close_producer()
        finally:
            await self.consumer.stop()


CLIENTS = {c.name: c for c in (Confluent, KafkaPython, AioKafka)}
