"""Which live node should own a partition: rendezvous (highest random weight) hashing.

Every node scores every partition with a hash of (topic id, partition, node id) and the highest score wins.
Each node computes the same answer from the same live set, with no coordination; partitions spread evenly;
and when a node joins or leaves only the partitions it wins or held change owner. The hash is blake2b, not
Python's `hash()`, so that every process (and every restart) agrees.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def score(topic_id: object, partition: int, node_id: int) -> int:
    """The weight of `node_id` for one partition: 64 bits of blake2b over "topic_id:partition:node_id"."""
    digest = hashlib.blake2b(f"{topic_id}:{partition}:{node_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def desired_owner(topic_id: object, partition: int, live_node_ids: Iterable[int]) -> int:
    """The live node that should own the partition (ties, which need a hash collision, go to the lower id);
    -1 when no node is live."""
    best, best_score = -1, -1
    for node_id in live_node_ids:
        weight = score(topic_id, partition, node_id)
        if weight > best_score or (weight == best_score and node_id < best):
            best, best_score = node_id, weight
    return best
