"""Replication factors: what CreateTopics and CreatePartitions accept, with Kafka's checks and messages
(ReplicationControlManager, StripedReplicaPlacer), and the replicas Metadata names.

Kafka places a partition's replicas on that many registered brokers, so a factor above their number is refused
(INVALID_REPLICATION_FACTOR). Local mode is a single broker: factor 1 only, Kafka's single-broker answer. In
cluster mode every partition's data lives once, in PostgreSQL, whose own replication gives its durability, and
any live node can lead any partition: a factor up to the number of live nodes is accepted and stored with the
topic, and each partition names the owner and the live nodes after it in node-id order (wrapping around), as
many as the factor allows, as its replicas and ISR. A node that dies leaves those lists (they name live nodes
only, so nothing is "under-replicated": nothing lags); one that comes back returns to them.

A manual assignment is checked as Kafka checks it (brokers registered, none twice, every partition with as
many replicas) and sets the factor; the owner is still chosen by the cluster's assignment (hashing).
"""

from __future__ import annotations

from collections.abc import Sequence

from coordinator.errors import InvalidReplicaAssignment, InvalidReplicationFactor, InvalidRequest


def check_factor(factor: int, brokers: int) -> None:
    """StripedReplicaPlacer.place's check: a factor above the number of live brokers cannot be placed."""
    if factor > brokers:
        raise InvalidReplicationFactor(f"The target replication factor of {factor} cannot be reached because only "
                                       f"{brokers} broker(s) are registered.")


def requested(factor: int, default: int) -> int:
    """CreateTopics' factor (-1: `default`); Kafka checks it before the partition count."""
    if factor < -1 or factor == 0:
        raise InvalidReplicationFactor("Replication factor must be larger than 0, or -1 to use the default value.")
    return default if factor == -1 else factor


def check_new_topic(factor: int, brokers: int) -> None:
    """CreateTopics' placement, after the partition count's checks: Kafka's message names the factor twice."""
    try:
        check_factor(factor, brokers)
    except InvalidReplicationFactor as exc:
        raise InvalidReplicationFactor(f"Unable to replicate the partition {factor} time(s): {exc}") from None


def check_assignments(assignments: Sequence[tuple[int, Sequence[int]]], num_partitions: int, factor: int,
                      brokers: set[int]) -> int:
    """CreateTopics with a manual assignment (ReplicationControlManager.createTopic): returns the factor it gives."""
    if factor != -1:
        raise InvalidRequest("A manual partition assignment was specified, but replication factor was not set to -1.")
    if num_partitions != -1:
        raise InvalidRequest("A manual partition assignment was specified, but numPartitions was not set to -1.")
    seen: set[int] = set()
    given: int | None = None
    for index, replicas in assignments:
        if index in seen:
            raise InvalidReplicaAssignment(f"Found multiple manual partition assignments for partition {index}")
        seen.add(index)
        check_assignment(replicas, brokers, given)
        given = len(replicas)
    if seen != set(range(len(seen))):
        raise InvalidReplicaAssignment("partitions should be a consecutive 0-based integer sequence")
    assert given is not None
    return given


def check_assignment(replicas: Sequence[int], brokers: set[int], factor: int | None) -> None:
    """Kafka's validateManualPartitionAssignment: `factor`, the one of the partitions before (None: the first)."""
    if not replicas:
        raise InvalidReplicaAssignment("The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(replicas):
        if broker not in brokers:
            raise InvalidReplicaAssignment(f"The manual partition assignment includes broker {broker}, but no such "
                                           "broker is registered.")
        if broker == previous:
            raise InvalidReplicaAssignment(f"The manual partition assignment includes the broker {broker} more "
                                           "than once.")
        previous = broker
    if factor is not None and len(replicas) != factor:
        raise InvalidReplicaAssignment(f"The manual partition assignment includes a partition with {len(replicas)} "
                                       "replica(s), but this is not consistent with previous partitions, which have "
                                       f"{factor} replica(s).")


def replica_nodes(leader: int, live: Sequence[int], factor: int) -> list[int]:
    """The replicas (and ISR) of a partition led by `leader`: it, then the live node ids after it (`live` sorted),
    wrapping around, `factor` nodes at most."""
    if factor <= 1:  # local mode, and most topics: no list to walk
        return [leader]
    after = [node for node in live if node > leader] + [node for node in live if node < leader]
    return [leader, *after[:factor - 1]]
