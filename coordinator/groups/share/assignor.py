"""Kafka's SimpleAssignor for share groups (4.2: SimpleHomogeneousAssignmentBuilder and
SimpleHeterogeneousAssignmentBuilder), pure.

Several members of a share group may share a partition. Per topic, among the members subscribed to it and
over its assignable partitions (those whose share state is initialized):

* members <= partitions: every partition goes to exactly one member; each member gets floor or ceil of
  partitions / members of them;
* members > partitions: every member gets exactly one partition; each partition gets floor or ceil of
  members / partitions members.

Balance first, then stickiness: a member keeps what it had in the previous target assignment within its
quota; the rest is handed out in order (members by id, partitions by number). When all members subscribe to
the same topics (homogeneous) the topics' partitions are balanced as one pool; otherwise (heterogeneous) each
topic is balanced among its own subscribers.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

TopicId = uuid.UUID
Assignment = dict[TopicId, frozenset[int]]
TopicPartition = tuple[TopicId, int]


def assign(subscriptions: Mapping[str, frozenset[TopicId]], assignable: Mapping[TopicId, frozenset[int]],
           previous: Mapping[str, Mapping[TopicId, frozenset[int]]]) -> dict[str, Assignment]:
    """The target assignment: member id -> topic id -> partitions."""
    members = sorted(subscriptions)
    result: dict[str, dict[TopicId, set[int]]] = {m: {} for m in members}
    if not members:
        return {}
    homogeneous = len({subscriptions[m] for m in members}) == 1
    if homogeneous:
        topics = sorted((t for t in subscriptions[members[0]] if assignable.get(t)), key=lambda t: t.bytes)
        pool = [(t, p) for t in topics for p in sorted(assignable[t])]
        _share(members, pool, previous, result)
    else:
        for topic in sorted({t for m in members for t in subscriptions[m]}, key=lambda t: t.bytes):
            subscribers = [m for m in members if topic in subscriptions[m]]
            pool = [(topic, p) for p in sorted(assignable.get(topic, ()))]
            if pool:
                _share(subscribers, pool, previous, result)
    return {m: {t: frozenset(ps) for t, ps in topics_.items() if ps} for m, topics_ in result.items()}


def _held(member: str, previous: Mapping[str, Mapping[TopicId, frozenset[int]]], pool: set[TopicPartition]
          ) -> list[TopicPartition]:
    return sorted(((t, p) for t, ps in previous.get(member, {}).items() for p in ps if (t, p) in pool),
                  key=lambda tp: (tp[0].bytes, tp[1]))


def _share(members: list[str], pool: list[TopicPartition], previous: Mapping[str, Mapping[TopicId, frozenset[int]]],
           result: dict[str, dict[TopicId, set[int]]]) -> None:
    if not pool:
        return
    if len(members) <= len(pool):
        _spread_partitions(members, pool, previous, result)
    else:
        _spread_members(members, pool, previous, result)


def _spread_partitions(members: list[str], pool: list[TopicPartition],
                       previous: Mapping[str, Mapping[TopicId, frozenset[int]]],
                       result: dict[str, dict[TopicId, set[int]]]) -> None:
    """Each partition to one member; members get floor or ceil of partitions / members."""
    minimum, extras = divmod(len(pool), len(members))
    available = set(pool)
    quota: dict[str, int] = {}
    for member in members:
        held = [tp for tp in _held(member, previous, available) if tp in available]
        quota[member] = minimum + (1 if extras > 0 and len(held) > minimum else 0)
        if quota[member] > minimum:
            extras -= 1
        for tp in held[:quota[member]]:
            available.discard(tp)
            result[member].setdefault(tp[0], set()).add(tp[1])
    for member in members:  # the remaining extras go to members in order
        if quota[member] == minimum and extras > 0:
            quota[member] += 1
            extras -= 1
    rest = [tp for tp in pool if tp in available]
    for member in members:
        count = sum(len(ps) for t, ps in result[member].items() if any(t == tp[0] for tp in pool))
        while count < quota[member] and rest:
            t, p = rest.pop(0)
            result[member].setdefault(t, set()).add(p)
            count += 1


def _spread_members(members: list[str], pool: list[TopicPartition],
                    previous: Mapping[str, Mapping[TopicId, frozenset[int]]],
                    result: dict[str, dict[TopicId, set[int]]]) -> None:
    """More members than partitions: each member gets one partition, each partition floor or ceil of
    members / partitions members."""
    minimum, extras = divmod(len(members), len(pool))
    sharing = {tp: 0 for tp in pool}
    capacity = {tp: minimum for tp in pool}
    unplaced = []
    for member in members:  # stickiness: keep one partition held before if it has room
        placed = False
        for tp in _held(member, previous, set(pool)):
            if sharing[tp] < capacity[tp] or (sharing[tp] == capacity[tp] == minimum and extras > 0):
                if sharing[tp] == capacity[tp]:
                    capacity[tp] += 1
                    extras -= 1
                sharing[tp] += 1
                result[member].setdefault(tp[0], set()).add(tp[1])
                placed = True
                break
        if not placed:
            unplaced.append(member)
    for member in unplaced:
        tp = min(pool, key=lambda c: (sharing[c] >= capacity[c], sharing[c], pool.index(c)))
        if sharing[tp] >= capacity[tp]:
            capacity[tp] += 1
            extras -= 1
        sharing[tp] += 1
        result[member].setdefault(tp[0], set()).add(tp[1])
