"""KIP-932 share groups end to end: confluent-kafka's ShareConsumer (librdkafka's share consumer) against the real
server process. Several consumers share ONE partition; RELEASE redelivers with delivery count 2; ACCEPT and
REJECT never redeliver; a consumer killed -9 or frozen while it holds records: another gets them (at once when its
connection closes, after the lock when it stays open); the delivery count limit archives; the server killed -9:
nothing acknowledged is delivered again."""

from __future__ import annotations

import os
import signal
import threading
import time

from confluent_kafka import AcknowledgeType

from tests.support.server_process import start_server
from tests.support.share_clients import FAST_SHARE, holding_consumer, joined, poll_until, produce, share_consumer


def _values(n: int, tag: str = "m") -> list[bytes]:
    return [f"{tag}{i}".encode() for i in range(n)]


def test_several_consumers_share_one_partition(tmp_path):
    server = start_server(str(tmp_path / "data"), overrides=FAST_SHARE, topics={"q": 1})
    consumers = [share_consumer(server.bootstrap, "sg", ["q"], **{"max.poll.records": "5"}) for _ in range(3)]
    try:
        for c in consumers:
            joined(c)
        produce(server.bootstrap, "q", _values(90), per_batch=3)
        seen: dict[int, list[int]] = {i: [] for i in range(3)}
        stop = threading.Event()

        def run(i: int) -> None:
            c = consumers[i]
            while not stop.is_set() and sum(map(len, seen.values())) < 90:
                for m in c.poll(0.3) or []:
                    if m.error() is None:
                        seen[i].append(m.offset())
                        time.sleep(0.02)  # some work per record: the others acquire meanwhile

        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        stop.set()
        offsets = sorted(o for got in seen.values() for o in got)
        assert offsets == list(range(90)), offsets  # every record once, to one consumer only
        assert sum(1 for got in seen.values() if got) >= 2, {i: len(g) for i, g in seen.items()}
    finally:
        for c in consumers:
            c.close()
        server.stop()


def test_release_redelivers_accept_and_reject_never_again(tmp_path):
    server = start_server(str(tmp_path / "data"), overrides=FAST_SHARE, topics={"q": 1})
    c = share_consumer(server.bootstrap, "sg", ["q"], **{"share.acknowledgement.mode": "explicit"})
    try:
        joined(c)
        produce(server.bootstrap, "q", _values(9))
        kinds = {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.RELEASE, 2: AcknowledgeType.REJECT}

        def ack(batch: list) -> None:
            for m in batch:
                c.acknowledge(m, kinds[m.offset() % 3] if m.delivery_count() == 1 else AcknowledgeType.ACCEPT)

        got = poll_until(c, lambda got: len(got) >= 12, on_batch=ack)
        c.commit_sync()
        deliveries = sorted((m.offset(), m.delivery_count()) for m in got)
        # every record once; the released ones (offsets 1, 4, 7) again with delivery count 2, then accepted
        assert deliveries == sorted([(o, 1) for o in range(9)] + [(o, 2) for o in (1, 4, 7)]), deliveries
        assert poll_until(c, lambda got: False, timeout=3, on_batch=ack) == []  # nothing comes back
    finally:
        c.close()
        server.stop()


def test_the_delivery_count_limit_archives(tmp_path):
    server = start_server(str(tmp_path / "data"), overrides={**FAST_SHARE, "group.share.delivery.count.limit": "2"},
                          topics={"q": 1})
    c = share_consumer(server.bootstrap, "sg", ["q"], **{"share.acknowledgement.mode": "explicit"})
    try:
        joined(c)
        produce(server.bootstrap, "q", _values(3))

        def release(batch: list) -> None:
            for m in batch:
                c.acknowledge(m, AcknowledgeType.RELEASE)

        got = poll_until(c, lambda got: False, timeout=8, on_batch=release)
        assert sorted((m.offset(), m.delivery_count()) for m in got) == [(o, n) for o in range(3) for n in (1, 2)]
    finally:
        c.close()
        server.stop()


def _started(bootstrap: str, group: str, topic: str) -> None:
    """The share partition starts where its log ends now (share.auto.offset.reset=latest), through a consumer that
    joins and leaves: the records produced next are all delivered to the group."""
    starter = share_consumer(bootstrap, group, [topic])
    joined(starter)
    starter.close()


def _accepting(consumer):
    def accept(batch: list) -> None:
        for m in batch:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)

    return accept


def test_a_frozen_consumer_gives_what_it_holds_back_when_the_lock_runs_out(tmp_path):
    server = start_server(str(tmp_path / "data"), overrides=FAST_SHARE, topics={"q": 1})
    frozen = None
    try:
        _started(server.bootstrap, "sg", "q")
        produce(server.bootstrap, "q", _values(20))
        frozen, held = holding_consumer(server.bootstrap, "sg", "q", 1)
        os.kill(frozen.pid, signal.SIGSTOP)  # its connection stays open: its share session too
        c = share_consumer(server.bootstrap, "sg", ["q"], **{"share.acknowledgement.mode": "explicit"})
        try:
            got = poll_until(c, lambda got: {m.offset() for m in got} >= set(range(20)), on_batch=_accepting(c))
            c.commit_sync()
        finally:
            c.close()
        assert {m.offset() for m in got} == set(range(20))
        # what the frozen member held came back through its lock's expiry (3 s): delivered a second time
        assert {m.offset(): m.delivery_count() for m in got if m.offset() in held} == {o: 2 for o in held}
        assert all(m.delivery_count() == 1 for m in got if m.offset() not in held)
    finally:
        if frozen is not None:
            frozen.kill()
            frozen.wait()
        server.stop()


def test_a_consumer_killed_holding_records_gives_them_back(tmp_path):
    server = start_server(str(tmp_path / "data"), overrides={**FAST_SHARE, "group.share.record.lock.duration.ms":
                                                             "30000"}, topics={"q": 1})
    try:
        _started(server.bootstrap, "sg", "q")
        produce(server.bootstrap, "q", _values(20))
        killed, held = holding_consumer(server.bootstrap, "sg", "q", 1)
        killed.kill()  # SIGKILL: its connection closes, its share session ends, what it held is released
        killed.wait()
        started = time.monotonic()
        c = share_consumer(server.bootstrap, "sg", ["q"], **{"share.acknowledgement.mode": "explicit"})
        try:
            got = poll_until(c, lambda got: {m.offset() for m in got} >= set(range(20)), on_batch=_accepting(c))
            c.commit_sync()
        finally:
            c.close()
        assert {m.offset() for m in got} == set(range(20))
        assert {m.offset(): m.delivery_count() for m in got if m.offset() in held} == {o: 2 for o in held}
        assert time.monotonic() - started < 25  # long before the 30 s lock would have run out
    finally:
        server.stop()


def test_the_server_killed_nothing_acknowledged_is_delivered_again(tmp_path):
    data = str(tmp_path / "data")
    server = start_server(data, overrides=FAST_SHARE, topics={"q": 1})
    c = share_consumer(server.bootstrap, "sg", ["q"], **{"share.acknowledgement.mode": "explicit",
                                                         "max.poll.records": "10"})
    try:
        joined(c)
        produce(server.bootstrap, "q", _values(50))
        acknowledged: set[int] = set()

        def accept_some(batch: list) -> None:
            for m in batch:
                kind = AcknowledgeType.ACCEPT if m.offset() % 5 else AcknowledgeType.REJECT
                c.acknowledge(m, kind)
                acknowledged.add(m.offset())

        poll_until(c, lambda got: len(got) >= 30, on_batch=accept_some)
        c.commit_sync()  # answered once durable
        server.kill()  # SIGKILL
    finally:
        c.close()
        server.kill()
    server = start_server(data, overrides=FAST_SHARE)
    c = share_consumer(server.bootstrap, "sg", ["q"])
    try:
        got = poll_until(c, lambda got: len({m.offset() for m in got}) >= 50 - len(acknowledged), timeout=40)
        offsets = {m.offset() for m in got}
        assert not offsets & acknowledged, sorted(offsets & acknowledged)
        assert offsets == set(range(50)) - acknowledged
    finally:
        c.close()
        server.stop()


def test_describe_delete_and_alter_share_group_offsets(tmp_path):
    from kio.schema.alter_share_group_offsets.v0.request import (
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsRequestPartition,
        AlterShareGroupOffsetsRequestTopic,
    )
    from kio.schema.delete_share_group_offsets.v0.request import (
        DeleteShareGroupOffsetsRequest,
        DeleteShareGroupOffsetsRequestTopic,
    )
    from kio.schema.describe_share_group_offsets.v1.request import (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsRequestGroup,
        DescribeShareGroupOffsetsRequestTopic,
    )
    from kio.schema.errors import ErrorCode

    from tests.support.wire_client import WireClient

    server = start_server(str(tmp_path / "data"), overrides=FAST_SHARE, topics={"q": 1})
    c = share_consumer(server.bootstrap, "sg", ["q"], **{"share.acknowledgement.mode": "explicit"})
    try:
        joined(c)
        produce(server.bootstrap, "q", _values(10))
        produce(server.bootstrap, "q", _values(5, "later"))

        def accept_first_ten(batch: list) -> None:
            for m in batch:
                c.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() < 10 else AcknowledgeType.RELEASE)

        poll_until(c, lambda got: {m.offset() for m in got} >= set(range(10)), on_batch=accept_first_ten)
        c.commit_sync()
        with WireClient(server.host, server.port) as wire:
            def describe(topics=None):
                return wire.call(DescribeShareGroupOffsetsRequest(groups=(DescribeShareGroupOffsetsRequestGroup(
                    group_id="sg", topics=topics),)))

            [group] = describe().groups
            [topic] = group.topics
            [part] = topic.partitions
            assert (group.error_code, topic.topic_name, part.partition_index) == (ErrorCode.none, "q", 0)
            assert part.start_offset == 10 and part.lag == 5  # 15 records, 10 acknowledged below the start
            [named] = describe((DescribeShareGroupOffsetsRequestTopic(topic_name="q", partitions=(0,)),
                                DescribeShareGroupOffsetsRequestTopic(topic_name="nope", partitions=(0,)))).groups
            assert [(t.topic_name, [p.start_offset for p in t.partitions]) for t in named.topics] == [
                ("q", [10]), ("nope", [-1])]

            def delete():
                return wire.call(DeleteShareGroupOffsetsRequest(group_id="sg", topics=(
                    DeleteShareGroupOffsetsRequestTopic(topic_name="q"),)))

            assert delete().error_code is ErrorCode.non_empty_group
            c.close()
            deadline = time.monotonic() + 10
            answer = delete()
            while answer.error_code is ErrorCode.non_empty_group and time.monotonic() < deadline:
                time.sleep(0.2)
                answer = delete()
            assert answer.error_code is ErrorCode.none and [(t.topic_name, t.error_code) for t in answer.responses] \
                == [("q", ErrorCode.none)]
            assert describe().groups[0].topics == ()  # no share state any more
            # reset the queue's head to offset 3: a new member gets everything from there, once more
            altered = wire.call(AlterShareGroupOffsetsRequest(group_id="sg", topics=(AlterShareGroupOffsetsRequestTopic(
                topic_name="q", partitions=(AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                                                   start_offset=3),)),)))
            assert altered.error_code is ErrorCode.none and altered.responses[0].partitions[0].error_code is \
                ErrorCode.none, altered
            assert describe().groups[0].topics[0].partitions[0].start_offset == 3
        again = share_consumer(server.bootstrap, "sg", ["q"])
        try:
            got = poll_until(again, lambda got: {m.offset() for m in got} >= set(range(3, 15)))
        finally:
            again.close()
        assert sorted(m.offset() for m in got) == list(range(3, 15))
    finally:
        c.close()
        server.stop()
