"""Cluster mode: node membership (leases), partition ownership (rendezvous + epochs) and the live view
of the cluster that Metadata/FindCoordinator answer from. Policy only: the SQL is in storage/pg/.

`view` answers the wire's questions (Metadata, FindCoordinator, leadership checks); in local
mode `LocalView` says this node is every broker and the leader of everything.
"""

from coordinator.cluster.view import Broker, ClusterView, LocalView

__all__ = ["Broker", "ClusterView", "LocalView"]
