"""The ConsumerGroupHeartbeat fast path answers a steady heartbeat byte for byte as the generic path does, moves
the member's session, and leaves everything else (a new subscription, owned partitions, a member that must
reconcile, a changed topic) to the generic path."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest, TopicPartitions
from kio.static.primitive import i32Timedelta

from bench.lib.wire import request_frame
from coordinator.handlers.consumer_group_heartbeat import ConsumerGroupHeartbeatHandler
from tests.support.consumer_groups import Consumer, ConsumerHarness

STEADY = i32Timedelta.parse(datetime.timedelta(milliseconds=-1))


def request(member_id: str, epoch: int, **fields) -> ConsumerGroupHeartbeatRequest:
    values = dict(group_id="g", member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
                  rebalance_timeout=STEADY, subscribed_topic_names=None, subscribed_topic_regex=None,
                  server_assignor=None, topic_partitions=None)
    values.update(fields)
    return ConsumerGroupHeartbeatRequest(**values)


def body(req: ConsumerGroupHeartbeatRequest, correlation_id: int = 5) -> bytes:
    return request_frame(req, correlation_id)[4:]


@pytest.fixture
def stable():
    h = ConsumerHarness()
    a, b = Consumer(h), Consumer(h)
    a.beat()
    b.beat()
    for _ in range(4):
        a.beat()
        b.beat()
    handler = ConsumerGroupHeartbeatHandler(h.coordinator, _NoAccess())
    return h, a, handler


class _NoAccess:
    enabled = False


def test_a_steady_heartbeat_is_answered_as_the_generic_path_answers_it(stable):
    h, a, handler = stable
    from coordinator.handlers.consumer_group_heartbeat import params_of, response
    from coordinator.net.dispatch import RequestContext

    req = request(a.member_id, a.epoch)
    fast = handler.fast(body(req, 9), 1, 9)
    assert fast is not None
    ctx = RequestContext(68, 1, 9, "client", "/127.0.0.1", 1)  # as the harness joined it
    answer, write = h.shard().consumer_heartbeat(params_of(ctx, req))
    assert write is None and answer.assignment is None
    from protocol.codec import encode_response
    assert fast == encode_response(9, 1, response(1, answer))


def test_the_fast_path_moves_the_session(stable):
    h, a, handler = stable
    b = next(m for m in h.group().members.values() if m.member_id != a.member_id)
    for _ in range(20):  # 80 s: a and b beat through the fast path only
        h.clock.advance(4_000)
        assert handler.fast(body(request(a.member_id, a.epoch)), 1, 5) is not None
        assert handler.fast(body(request(b.member_id, b.member_epoch)), 1, 5) is not None
    assert set(h.group().members) == {a.member_id, b.member_id}
    h.clock.advance(45_000)  # silence: both sessions end
    assert h.group().members == {}


@pytest.mark.parametrize("change", [
    {"subscribed_topic_names": ("orders",)},
    {"topic_partitions": (TopicPartitions(topic_id=None, partitions=()),)},
    {"server_assignor": "range"},
    {"rack_id": "r1"},
    {"subscribed_topic_regex": "o.*"},
    {"rebalance_timeout": i32Timedelta.parse(datetime.timedelta(seconds=1))},
])
def test_anything_new_in_the_request_takes_the_generic_path(stable, change):
    h, a, handler = stable
    assert handler.fast(body(request(a.member_id, a.epoch, **change)), 1, 5) is None


def test_wrong_epochs_unknown_members_and_reconciling_groups_take_the_generic_path(stable):
    h, a, handler = stable
    assert handler.fast(body(request(a.member_id, a.epoch + 1)), 1, 5) is None
    assert handler.fast(body(request("nobody", a.epoch)), 1, 5) is None
    Consumer(h).beat()  # a third member: the group has a new target, a must reconcile
    assert handler.fast(body(request(a.member_id, a.epoch)), 1, 5) is None


def test_a_topic_change_takes_the_generic_path(stable):
    h, a, handler = stable
    h.topics.add("other", 1)  # the catalog moved: the group must look again
    assert handler.fast(body(request(a.member_id, a.epoch)), 1, 5) is None
