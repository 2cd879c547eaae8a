"""The cluster as the wire sees it: brokers, the controller, and each partition's leader.

Metadata, FindCoordinator and the leadership checks of the data plane ask a `ClusterView`.
`LocalView` is local mode (storage.url unset): this node is the only broker, the controller
and the leader of every partition at epoch 0. Cluster mode plugs in a view refreshed from
PostgreSQL (coordinator/cluster/state.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from coordinator.node import Node

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class Broker:
    """A live broker; `host`/`port` are its first listener's, `endpoints` (name, host, port) all of them."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    endpoints: tuple[tuple[str, str, int], ...] = ()

    def on(self, listener: str) -> Broker | None:
        """This broker as seen from `listener` (its endpoint of that name), None if it has no such
        listener (Kafka leaves it out of Metadata); "" or a broker that names none: as it is."""
        if not listener or not self.endpoints:
            return self
        for name, host, port in self.endpoints:
            if name == listener:
                return self if (host, port) == (self.host, self.port) else \
                    Broker(self.node_id, host, port, self.rack, self.endpoints)
        return None


def listener_brokers(brokers: Iterable[Broker], listener: str) -> list[Broker]:
    """The brokers as a client of `listener` sees them: those with that listener, at its address."""
    return [seen for seen in (broker.on(listener) for broker in brokers) if seen is not None]


class ClusterView(Protocol):
    def brokers(self) -> list[Broker]:
        """Every live broker, this node included."""

    def controller_id(self) -> int:
        """The node named as controller in Metadata."""

    def broker(self, node_id: int) -> Broker | None:
        """A live broker by id, None when not live."""

    def leader(self, topic: str, partition: int) -> int:
        """The owner of a partition, NO_LEADER (-1) when none."""

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The owner's epoch of a partition (Metadata's leader_epoch); 0 when unknown."""

    def owns(self, topic: str, partition: int) -> bool:
        """Whether this node owns the partition."""


class LocalView:
    """One node owns everything. Reads `node` at each call: its endpoint is set once the
    listener is bound (Node.advertise), after the view is built."""

    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        self.node = node

    def me(self) -> Broker:
        node = self.node
        return Broker(node.node_id, node.host, node.port, node.rack, node.endpoints)

    def brokers(self) -> list[Broker]:
        return [self.me()]

    def controller_id(self) -> int:
        return self.node.node_id

    def broker(self, node_id: int) -> Broker | None:
        return self.me() if node_id == self.node.node_id else None

    def leader(self, topic: str, partition: int) -> int:
        return self.node.node_id

    def leader_epoch(self, topic: str, partition: int) -> int:
        return 0

    def owns(self, topic: str, partition: int) -> bool:
        return True
