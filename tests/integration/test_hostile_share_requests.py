"""Hostile ShareFetch / ShareAcknowledge input on the wire, against the real server: acknowledgement batches out
of range, out of order, overlapping, with a first offset past the last, huge ranges and counts, wrong type lists,
Renew where it is not allowed, acknowledgements in a session's first fetch, wrong session epochs, unknown topic ids.
Each gets Kafka's error (per partition INVALID_REQUEST or INVALID_RECORD_STATE in AcknowledgeErrorCode, or the
session errors for the whole request), answers at once, changes nothing (the member then accepts what it holds),
and another connection is served throughout."""

from __future__ import annotations

import datetime
import time
import uuid

from kio.schema.errors import ErrorCode
from kio.schema.share_acknowledge.v1.request import (
    AcknowledgementBatch as AckBatchV1,
    AcknowledgePartition,
    AcknowledgeTopic,
    ShareAcknowledgeRequest,
)
from kio.schema.share_fetch.v1.request import AcknowledgementBatch, FetchPartition, FetchTopic, ShareFetchRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.static.primitive import i32Timedelta

from tests.support.server_process import start_server
from tests.support.share_clients import FAST_SHARE, produce
from tests.support.wire_client import WireClient

E = ErrorCode
MEMBER = "hostile-member-0000001"
HUGE = 2**62


def _join(client: WireClient, group: str = "sg") -> uuid.UUID:
    """Join the share group and heartbeat until the member is assigned the partition; its topic id."""
    epoch = 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        answer = client.call(ShareGroupHeartbeatRequest(group_id=group, member_id=MEMBER, member_epoch=epoch,
                                                        rack_id=None,
                                                        subscribed_topic_names=("q",) if epoch == 0 else None))
        assert answer.error_code is E.none, answer
        epoch = answer.member_epoch
        if answer.assignment is not None and answer.assignment.topic_partitions:
            return answer.assignment.topic_partitions[0].topic_id
        time.sleep(0.3)
    raise AssertionError("never assigned")


def _fetch(client: WireClient, epoch: int, topic_id: uuid.UUID, acks: tuple = (), wait_ms: int = 0,
           group: str = "sg") -> object:
    return client.call(ShareFetchRequest(
        group_id=group, member_id=MEMBER, share_session_epoch=epoch,
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=wait_ms)), min_bytes=1, max_bytes=1 << 20,
        max_records=100, batch_size=100,
        topics=(FetchTopic(topic_id=topic_id, partitions=(FetchPartition(partition_index=0,
                                                                          acknowledgement_batches=acks),)),),
        forgotten_topics_data=()))


def _ack(client: WireClient, epoch: int, topic_id: uuid.UUID, batches: tuple) -> object:
    return client.call(ShareAcknowledgeRequest(
        group_id="sg", member_id=MEMBER, share_session_epoch=epoch,
        topics=(AcknowledgeTopic(topic_id=topic_id, partitions=(AcknowledgePartition(
            partition_index=0, acknowledgement_batches=batches),)),)))


def _batch(first: int, last: int, *types: int) -> AckBatchV1:
    return AckBatchV1(first_offset=first, last_offset=last, acknowledge_types=types)


def _code(answer) -> ErrorCode:
    [topic] = answer.responses
    [part] = topic.partitions
    return part.error_code


def test_hostile_acknowledgements_get_kafkas_errors_and_change_nothing(tmp_path):
    server = start_server(str(tmp_path / "data"), overrides=FAST_SHARE, topics={"q": 1})
    try:
        with WireClient(server.host, server.port) as c, WireClient(server.host, server.port) as other:
            topic_id = _join(c)
            first = _fetch(c, 0, topic_id)  # opens the session: the share partition starts at the log end
            assert first.error_code is E.none, first
            produce(server.bootstrap, "q", [b"%d" % i for i in range(10)])
            fetched = _fetch(c, 1, topic_id, wait_ms=5000)
            acquired = [(a.first_offset, a.last_offset, a.delivery_count)
                        for t in fetched.responses for p in t.partitions for a in p.acquired_records]
            assert acquired == [(0, 9, 1)], fetched
            epoch = 2
            hostile = [
                ((_batch(5, 2, 1),), E.invalid_request),  # first offset past the last
                ((_batch(0, 3, 1), _batch(3, 5, 1)), E.invalid_request),  # overlapping
                ((_batch(4, 5, 1), _batch(0, 1, 1)), E.invalid_request),  # out of order
                ((_batch(0, 2, 1, 1),), E.invalid_request),  # two types for three offsets
                ((_batch(0, 1),), E.invalid_request),  # no type
                ((_batch(0, 1, 9),), E.invalid_request),  # no such type
                ((_batch(0, 1, 4),), E.invalid_request),  # Renew outside v2's IsRenewAck
                ((_batch(100, 105, 1),), E.invalid_record_state),  # never acquired
                ((_batch(0, HUGE, 1),), E.invalid_record_state),  # a huge range
                ((_batch(HUGE, HUGE + 5, 1),), E.invalid_record_state),
                ((_batch(-5, -1, 1),), E.invalid_record_state),
                ((_batch(8, 12, 1),), E.invalid_record_state),  # half of it acquired: all or nothing
            ]
            for batches, expected in hostile:
                started = time.monotonic()
                answer = _ack(c, epoch, topic_id, batches)
                assert answer.error_code is E.none and _code(answer) is expected, (batches, answer)
                assert time.monotonic() - started < 2.0
                epoch += 1
                # the same batches piggybacked on a ShareFetch: AcknowledgeErrorCode
                answer = _fetch(c, epoch, topic_id, acks=tuple(AcknowledgementBatch(
                    first_offset=b.first_offset, last_offset=b.last_offset, acknowledge_types=b.acknowledge_types)
                    for b in batches))
                [part] = answer.responses[0].partitions
                assert answer.error_code is E.none and part.acknowledge_error_code == expected, (batches, answer)
                epoch += 1
            # session errors answer the whole request
            assert _ack(c, 0, topic_id, (_batch(0, 0, 1),)).error_code is E.invalid_share_session_epoch
            assert _ack(c, epoch + 7, topic_id, (_batch(0, 0, 1),)).error_code is E.invalid_share_session_epoch
            assert _fetch(c, epoch + 7, topic_id).error_code is E.invalid_share_session_epoch
            assert _fetch(other, 5, topic_id, group="nobody").error_code is E.share_session_not_found
            opening = _fetch(other, 0, topic_id, acks=(AcknowledgementBatch(first_offset=0, last_offset=0,
                                                                            acknowledge_types=(1,)),))
            assert opening.error_code is E.invalid_request
            unknown = _ack(c, epoch, uuid.uuid4(), (_batch(0, 0, 1),))
            assert _code(unknown) is E.unknown_topic_id
            epoch += 1
            # nothing of the above changed anything: the member accepts all it holds
            done = _ack(c, epoch, topic_id, (_batch(0, 9, 1),))
            assert done.error_code is E.none and _code(done) is E.none, done
            assert _code(_ack(c, epoch + 1, topic_id, (_batch(0, 9, 1),))) is E.invalid_record_state  # done once
    finally:
        server.stop()
