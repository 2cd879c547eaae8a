"""Hostile ConsumerGroupHeartbeats against the real server under a container-like memory limit: a subscription of
three million topic names, a member listing twenty million owned partitions, a backtracking regular expression.
Each is answered with Kafka's error code while a well-behaved client on another connection keeps its answers
within RESPONSIVE_SECONDS, and the group's real member carries on."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest, TopicPartitions
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from tests.integration.test_consumer_group_wire import beat
from tests.support.hostile import Watchdog, start_limited_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

E = ErrorCode


def heartbeat(member_id: str, epoch: int, **fields) -> ConsumerGroupHeartbeatRequest:
    values = dict(group_id="g", member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
                  rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30 if epoch == 0 else -0.001)),
                  subscribed_topic_names=None, subscribed_topic_regex=None, server_assignor=None,
                  topic_partitions=() if epoch == 0 else None)
    values.update(fields)
    return ConsumerGroupHeartbeatRequest(**values)


@pytest.fixture
def server(tmp_path):
    server = start_limited_server(str(tmp_path), topics={"orders": 4, "a" * 200 + "b": 1})
    try:
        yield server
    finally:
        server.kill()


def test_three_million_subscribed_names(server):
    names = tuple(f"t{i:07d}" for i in range(3_000_000))
    with Watchdog(server) as watchdog, WireClient(server.host, server.port, timeout=60) as client:
        answer = client.call(heartbeat("", 0, subscribed_topic_names=names))
    watchdog.check()
    assert answer.error_code is E.unknown_server_error  # Kafka's answer once the record fails to append


def test_twenty_million_owned_partitions(server):
    with WireClient(server.host, server.port, timeout=60) as client:
        member = beat(client, group="g")
        assert member.error_code is E.none
        owned = (TopicPartitions(topic_id=uuid.uuid4(), partitions=tuple(range(20_000_000))),)
        with Watchdog(server) as watchdog:
            answer = client.call(heartbeat(member.member_id, member.member_epoch, topic_partitions=owned))
        watchdog.check()
        assert answer.error_code is E.invalid_request
        again = client.call(heartbeat(member.member_id, member.member_epoch))
        assert again.error_code is E.none and again.member_epoch == member.member_epoch


def test_a_backtracking_regex_over_a_long_topic_name(server):
    with Watchdog(server) as watchdog, WireClient(server.host, server.port, timeout=60) as client:
        answer = client.call(heartbeat("", 0, subscribed_topic_regex="(a+)+"))
        assert answer.error_code is E.none
        refused = client.call(heartbeat("", 0, subscribed_topic_regex="(a)\\1"))
        assert refused.error_code is E.invalid_regular_expression
    watchdog.check()


def test_a_describe_of_a_million_group_ids(server):
    from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest

    ids = tuple(f"group-{i}" for i in range(1_000_000))
    with WireClient(server.host, server.port, timeout=60) as client:
        beat(client, group="group-7")
        with Watchdog(server) as watchdog:
            answer = client.call(ConsumerGroupDescribeRequest(group_ids=ids, include_authorized_operations=False))
        watchdog.check()
    assert len(answer.groups) == len(ids)
    assert [g.group_id for g in answer.groups if g.error_code is E.none] == ["group-7"]
