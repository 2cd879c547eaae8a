"""Cluster mode: node membership (leases), partition ownership (rendezvous + epochs) and the live view
of the cluster that Metadata/FindCoordinator answer from. Policy only: the SQL is in storage/pg/."""
