"""Which live node should own each partition: rendezvous hashing, bounded so that the spread is even.

Every node scores every (partition, node) pair with a hash of (topic id, partition, node id). Plain
rendezvous (the highest score wins) moves only what it must when nodes come and go, but on a topic of 50
partitions and 3 nodes it spreads them 20/20/10 or worse. So each topic's partitions are dealt out by
descending score under a capacity per node (the topic's partitions divided by the live nodes; the nodes
ranked highest for the topic take the remainder, one each): node counts differ by at most one, a node that
joins takes about its share (mostly the pairs it scores highest), and one that leaves hands its partitions to
the others with a few more moves between them. Every node computes the same answer from the same live set
with no coordination; the hash is blake2b, not Python's `hash()`, so that every process (and every restart)
agrees.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

NO_OWNER = -1
_TOPIC_RANK = -1  # the "partition" a topic's remainder ranking is scored at


def score(topic_id: object, partition: int, node_id: int) -> int:
    """The weight of `node_id` for one partition: 64 bits of blake2b over "topic_id:partition:node_id"."""
    digest = hashlib.blake2b(f"{topic_id}:{partition}:{node_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def assign_topic(topic_id: object, partitions: int, live_node_ids: Iterable[int]) -> list[int]:
    """The owner of each of the topic's partitions 0..partitions-1 (NO_OWNER when no node is live)."""
    nodes = sorted(set(live_node_ids))
    if not nodes:
        return [NO_OWNER] * partitions
    base, extra = divmod(partitions, len(nodes))
    ranked = sorted(nodes, key=lambda node: (-score(topic_id, _TOPIC_RANK, node), node))
    capacity = {node: base + (1 if rank < extra else 0) for rank, node in enumerate(ranked)}
    pairs = sorted(((score(topic_id, p, node), -node, p, node) for p in range(partitions) for node in nodes),
                   reverse=True)  # ties (a hash collision) go to the lower node id
    owners = [NO_OWNER] * partitions
    left = partitions
    for _, _, partition, node in pairs:
        if owners[partition] == NO_OWNER and capacity[node]:
            owners[partition] = node
            capacity[node] -= 1
            left -= 1
            if not left:
                break
    return owners


def partition_counts(keys: Iterable[tuple[object, int]]) -> dict[object, int]:
    """Each topic's partition count as a set of (topic id, partition) keys shows it (highest partition + 1)."""
    counts: dict[object, int] = {}
    for topic_id, partition in keys:
        if partition >= counts.get(topic_id, 0):
            counts[topic_id] = partition + 1
    return counts


def desired_owners(keys: Iterable[tuple[object, int]], live_node_ids: Iterable[int]) -> dict[tuple[object, int], int]:
    """The desired owner of every (topic id, partition) key, each topic dealt out by `assign_topic`."""
    keys = list(keys)
    live = sorted(set(live_node_ids))
    owners = {topic_id: assign_topic(topic_id, count, live) for topic_id, count in partition_counts(keys).items()}
    return {(topic_id, partition): owners[topic_id][partition] for topic_id, partition in keys}
