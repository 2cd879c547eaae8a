"""ClusterState: the live `ClusterView` of cluster mode, refreshed from kc_nodes and kc_partitions.

The membership loop calls `update` after each refresh; Metadata, FindCoordinator and the leadership checks read
it synchronously. A partition's leader is its owner while that owner's lease is live, else none (-1): a dead
node's partitions show no leader until a live node has taken them, so clients wait and retry rather than
connect to a dead node. Topics are named on the wire and keyed by id in PostgreSQL: `topic_id_of` (the topic
catalog's) resolves a name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from coordinator.cluster.view import NO_LEADER, Broker

WIRE_LEADER_EPOCH = 0  # the leader epoch clients see (Metadata, ListOffsets, batches), local mode's


def advertised_listeners(endpoints: Iterable[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """What a node registers in kc_nodes.listeners (JSON): its advertised listeners, the shape `broker_of` reads."""
    return [{"name": name, "host": host, "port": port} for name, host, port in endpoints]


def broker_of(node_id: int, listeners: Any, rack: str | None) -> Broker:
    """A Broker from a kc_nodes row: every advertised listener, the first as its address (jsonb arrives as
    text or decoded; a row from before listener names has one, PLAINTEXT)."""
    endpoints = json.loads(listeners) if isinstance(listeners, (str, bytes)) else listeners
    first = endpoints[0]
    named = tuple((str(e.get("name", "PLAINTEXT")), e["host"], int(e["port"])) for e in endpoints)
    return Broker(node_id, first["host"], int(first["port"]), rack, named)


class ClusterState:
    """Live brokers and partition owners as of the last refresh; `me` is this node's id."""

    def __init__(self, me: int, topic_id_of: Callable[[str], Any | None]) -> None:
        self.me = me
        self.topic_id_of = topic_id_of
        self._brokers: dict[int, Broker] = {}
        self._owners: dict[tuple[Any, int], tuple[int | None, int]] = {}  # (topic id, partition) -> owner, epoch

    def update(self, brokers: Iterable[Broker], rows: Iterable[Any]) -> None:
        """Replace the view: the live brokers and every kc_partitions row (topic_id, partition, owner, epoch)."""
        self._brokers = {broker.node_id: broker for broker in brokers}
        self._owners = {(row.topic_id, row.partition): (row.owner, row.epoch) for row in rows}

    def drop_broker(self, node_id: int) -> None:
        """`node_id` is not live any more (our own lease lapsed): it leads nothing until the next refresh."""
        self._brokers.pop(node_id, None)

    def live_node_ids(self) -> list[int]:
        return sorted(self._brokers)

    def brokers(self) -> list[Broker]:
        return [self._brokers[node_id] for node_id in sorted(self._brokers)]

    def controller_id(self) -> int:
        """The lowest live node id (this node's while it sees no live node, e.g. before the first refresh)."""
        return min(self._brokers, default=self.me)

    def broker(self, node_id: int) -> Broker | None:
        return self._brokers.get(node_id)

    def _owner(self, topic: str, partition: int) -> tuple[int, int]:
        topic_id = self.topic_id_of(topic)
        owner, epoch = self._owners.get((topic_id, partition), (None, 0)) if topic_id is not None else (None, 0)
        return (owner, epoch) if owner is not None and owner in self._brokers else (NO_LEADER, 0)

    def leader(self, topic: str, partition: int) -> int:
        return self._owner(topic, partition)[0]

    def leader_epoch(self, topic: str, partition: int) -> int:
        """WIRE_LEADER_EPOCH, as in local mode, whoever owns the partition: the server has no
        OffsetForLeaderEpoch, and a client told of a new leader epoch validates its position with that
        API (kafka-python 3 retries it forever on a broker without it; librdkafka stops fetching when
        the epochs of Metadata, ListOffsets and the batches disagree). The ownership epoch fences
        writes in PostgreSQL only (owner_epoch)."""
        return WIRE_LEADER_EPOCH

    def owner_epoch(self, topic: str, partition: int) -> int:
        """The owner's epoch of a partition (0 when it has no live owner)."""
        return self._owner(topic, partition)[1]

    def owns(self, topic: str, partition: int) -> bool:
        return self._owner(topic, partition)[0] == self.me
