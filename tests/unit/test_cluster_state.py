"""ClusterState: the live ClusterView built from kc_nodes and kc_partitions rows."""

from __future__ import annotations

import json
import uuid

from coordinator.cluster.state import ClusterState, advertised_listeners, broker_of
from coordinator.cluster.view import NO_LEADER, Broker, listener_brokers
from storage.pg.ownership import PartitionRow

ORDERS = uuid.UUID(int=11)


def row(topic_id: uuid.UUID, partition: int, owner: int | None, epoch: int) -> PartitionRow:
    return PartitionRow(topic_id, partition, owner, epoch, log_start=0)


def state(me: int = 2) -> ClusterState:
    view = ClusterState(me, {"orders": ORDERS}.get)
    view.update([Broker(3, "c", 9094), Broker(2, "b", 9093, "r2")],
                [row(ORDERS, 0, 2, 5), row(ORDERS, 1, 3, 7), row(ORDERS, 2, None, 4), row(ORDERS, 3, 1, 9)])
    return view


def test_brokers_are_the_live_nodes_in_id_order_and_the_controller_is_the_lowest():
    view = state()
    assert view.brokers() == [Broker(2, "b", 9093, "r2"), Broker(3, "c", 9094)]
    assert view.controller_id() == 2 and view.live_node_ids() == [2, 3]
    assert view.broker(3) == Broker(3, "c", 9094) and view.broker(1) is None


def test_the_leader_is_a_live_owner_with_its_epoch():
    view = state()
    assert [view.leader("orders", p) for p in range(5)] == [2, 3, NO_LEADER, NO_LEADER, NO_LEADER]
    assert [view.owner_epoch("orders", p) for p in range(4)] == [5, 7, 0, 0]  # node 1 is dead
    assert {view.leader_epoch("orders", p) for p in range(4)} == {0}  # clients see local mode's epoch
    assert view.leader("unknown", 0) == NO_LEADER


def test_owns_only_what_this_node_leads():
    view = state(me=2)
    assert [view.owns("orders", p) for p in range(4)] == [True, False, False, False]
    assert state(me=3).owns("orders", 1)


def test_before_the_first_refresh_this_node_is_the_controller_and_leads_nothing():
    view = ClusterState(5, lambda name: ORDERS)
    assert view.brokers() == [] and view.controller_id() == 5 and view.leader("orders", 0) == NO_LEADER


def test_a_registered_listener_reads_back_as_the_broker():
    endpoints = (("PLAINTEXT", "10.0.0.7", 9092),)
    listeners = advertised_listeners(endpoints)
    assert broker_of(7, json.dumps(listeners), "rack-a") == Broker(7, "10.0.0.7", 9092, "rack-a", endpoints)
    assert broker_of(7, listeners, None) == Broker(7, "10.0.0.7", 9092, None, endpoints)


def test_every_registered_listener_is_read_back_and_each_client_sees_its_own():
    endpoints = (("INTERNAL", "node7.internal", 9092), ("SASL_SSL", "kafka.example.com", 9094))
    broker = broker_of(7, json.dumps(advertised_listeners(endpoints)), None)
    assert (broker.host, broker.port) == ("node7.internal", 9092)  # the first is the node's address
    external = broker.on("SASL_SSL")
    assert external is not None and (external.host, external.port) == ("kafka.example.com", 9094)
    assert broker.on("INTERNAL") is broker
    assert broker.on("SSL") is None  # no such listener on that node: Kafka leaves it out of Metadata
    assert listener_brokers([broker, Broker(8, "n8", 9092)], "SSL") == [Broker(8, "n8", 9092)]


def test_a_row_from_before_listener_names_reads_as_plaintext():
    broker = broker_of(3, '[{"host": "h", "port": 1}]', None)
    assert broker.endpoints == (("PLAINTEXT", "h", 1),) and broker.on("PLAINTEXT") is broker


def test_a_dropped_broker_leads_nothing_until_the_next_update():
    view = state(me=2)
    view.drop_broker(2)
    assert not view.owns("orders", 0) and view.leader("orders", 0) == NO_LEADER
    assert [b.node_id for b in view.brokers()] == [3] and view.controller_id() == 3
