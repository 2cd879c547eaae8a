"""Kafka's SimpleAssignor for share groups: balance (each partition to one member while members <=
partitions, else each member to one partition and the partitions shared evenly), stickiness, and the
heterogeneous case per topic."""

from __future__ import annotations

import uuid

from hypothesis import given, strategies as st

from coordinator.groups.share.assignor import assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_fewer_members_than_partitions():
    result = assign({"a": frozenset({T1}), "b": frozenset({T1})}, {T1: frozenset(range(5))}, {})
    assert sorted(len(r[T1]) for r in result.values()) == [2, 3]
    assert result["a"][T1] | result["b"][T1] == frozenset(range(5)) and not result["a"][T1] & result["b"][T1]


def test_more_members_than_partitions_share_them():
    subs = {m: frozenset({T1}) for m in "abcde"}
    result = assign(subs, {T1: frozenset({0, 1})}, {})
    assert all(len(r[T1]) == 1 for r in result.values())
    shared = [sum(1 for r in result.values() if p in r[T1]) for p in (0, 1)]
    assert sorted(shared) == [2, 3]


def test_sticky():
    subs = {"a": frozenset({T1}), "b": frozenset({T1})}
    first = assign(subs, {T1: frozenset(range(4))}, {})
    subs["c"] = frozenset({T1})
    second = assign(subs, {T1: frozenset(range(4))}, first)
    moved = sum(len(first[m][T1] - second[m].get(T1, frozenset())) for m in "ab")
    assert moved == 1  # c takes one partition from the member that had an extra... and nothing else moves


def test_only_assignable_partitions_and_heterogeneous():
    result = assign({"a": frozenset({T1}), "b": frozenset({T1, T2})}, {T1: frozenset({0}), T2: frozenset({0, 1})},
                    {})
    assert result["a"] == {T1: frozenset({0})}
    assert result["b"][T1] == frozenset({0}) and result["b"][T2] == frozenset({0, 1})
    assert assign({"a": frozenset({T1})}, {}, {}) == {"a": {}}


@given(st.integers(1, 8), st.integers(1, 8), st.integers(0, 2**32))
def test_balance(members, partitions, seed):
    subs = {f"m{i}": frozenset({T1}) for i in range(members)}
    previous = {f"m{i}": {T1: frozenset({(seed >> i) % partitions})} for i in range(0, members, 2)}
    result = assign(subs, {T1: frozenset(range(partitions))}, previous)
    per_member = [len(r.get(T1, ())) for r in result.values()]
    per_partition = [sum(1 for r in result.values() if p in r.get(T1, ())) for p in range(partitions)]
    if members <= partitions:
        assert per_partition == [1] * partitions and max(per_member) - min(per_member) <= 1
    else:
        assert per_member == [1] * members and max(per_partition) - min(per_partition) <= 1
