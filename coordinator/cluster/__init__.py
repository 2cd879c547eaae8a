"""Cluster mode: who the brokers are and which node owns which partition.

`view` answers the wire's questions (Metadata, FindCoordinator, leadership checks); in local
mode `LocalView` says this node is every broker and the leader of everything.
"""

from coordinator.cluster.view import Broker, ClusterView, LocalView

__all__ = ["Broker", "ClusterView", "LocalView"]
