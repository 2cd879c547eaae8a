"""Rendezvous assignment: deterministic, even, and minimal movement when nodes come and go."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import Counter

from coordinator.cluster.assignment import desired_owner

TOPIC = uuid.UUID("5f2c3a4e-0000-4000-8000-00000000abcd")
PARTITIONS = range(50)


def owners(live: list[int], topic=TOPIC) -> dict[int, int]:
    return {p: desired_owner(topic, p, live) for p in PARTITIONS}


def test_fifty_offsets_partitions_spread_evenly_over_three_nodes():
    counts = Counter(owners([1, 2, 3]).values())
    assert set(counts) == {1, 2, 3}
    assert min(counts.values()) >= 10 and max(counts.values()) <= 24, counts


def test_many_partitions_spread_within_a_few_percent():
    counts = Counter(desired_owner(uuid.UUID(int=t + 1), p, [1, 2, 3, 4]) for t in range(20) for p in range(500))
    assert all(abs(n - 2500) < 150 for n in counts.values()), counts


def test_the_order_of_the_live_nodes_does_not_matter():
    assert owners([3, 1, 2]) == owners([1, 2, 3])


def test_a_joining_node_takes_only_what_it_wins():
    before, after = owners([1, 2, 3]), owners([1, 2, 3, 4])
    moved = {p for p in PARTITIONS if before[p] != after[p]}
    assert moved and all(after[p] == 4 for p in moved)


def test_a_leaving_node_moves_only_its_own_partitions():
    before, after = owners([1, 2, 3]), owners([1, 3])
    moved = {p for p in PARTITIONS if before[p] != after[p]}
    assert moved == {p for p in PARTITIONS if before[p] == 2}


def test_no_live_node_means_no_owner():
    assert desired_owner(TOPIC, 0, []) == -1


def test_every_process_computes_the_same_owners():
    """Not Python's salted hash(): another interpreter with another PYTHONHASHSEED agrees."""
    code = ("import uuid; from coordinator.cluster.assignment import desired_owner; "
            f"print([desired_owner(uuid.UUID('{TOPIC}'), p, [1, 2, 3]) for p in range(50)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "12345", "PYTHONPATH": "."}).stdout
    assert out.strip() == str([owners([1, 2, 3])[p] for p in PARTITIONS])
