"""State batches of a share partition's durable state, combined as Kafka's PersisterStateBatchCombiner does.

A state batch is (first offset, last offset, delivery state, delivery count) over a range of records
(storage.share_state_records.StateBatch). Combining a list of batches (the current state and an update):

1. pruning by the start offset: a batch wholly below it goes, one across it is cut to start there;
2. where batches overlap, the one with the higher delivery count wins, and on equal counts the higher
   delivery state (AVAILABLE 0 < ACKNOWLEDGED 2 < ARCHIVED 4): Kafka's compareBatchDeliveryInfo, applied
   pairwise over a TreeSet until nothing overlaps;
3. adjacent batches with the same state and count are one batch.

Kafka reaches the result by repeated pairwise merges; the fixpoint is the same as this sweep: every offset
carries the highest (count, state) of the batches covering it, written as maximal runs in offset order
(tests/unit/test_share_state_batches.py checks it against a per-offset model).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from storage.share_state_records import StateBatch

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4  # RecordState bytes (ACQUIRED is never persisted)


def _priority(batch: StateBatch) -> tuple[int, int]:
    return batch.delivery_count, batch.delivery_state


def prune(batches: Iterable[StateBatch], start_offset: int) -> list[StateBatch]:
    """The batches from `start_offset` on (all of them for -1: the start offset is not being changed)."""
    if start_offset == -1:
        return list(batches)
    kept = []
    for batch in batches:
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset < start_offset:
            batch = StateBatch(start_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)
        kept.append(batch)
    return kept


def combine(current: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int = -1) -> tuple[StateBatch, ...]:
    """`current` and `new` as one list of non-overlapping batches in offset order (see the module doc)."""
    batches = [b for b in prune([*current, *new], start_offset) if b.first_offset <= b.last_offset]
    if not batches:
        return ()
    batches.sort(key=lambda b: b.first_offset)
    out: list[StateBatch] = []
    active: list[tuple[tuple[int, int], int, StateBatch]] = []  # (-priority, index, batch): a max-heap by priority
    i, n = 0, len(batches)
    position = batches[0].first_offset
    while i < n or active:
        if not active:
            position = max(position, batches[i].first_offset)
        while i < n and batches[i].first_offset <= position:
            b = batches[i]
            heapq.heappush(active, ((-b.delivery_count, -b.delivery_state), i, b))
            i += 1
        while active and active[0][2].last_offset < position:
            heapq.heappop(active)
        if not active:
            continue
        top = active[0][2]
        # the top batch rules from `position` to its end or until a batch of higher priority starts
        end = top.last_offset
        for j in range(i, n):
            nxt = batches[j]
            if nxt.first_offset > end:
                break
            if _priority(nxt) > _priority(top):
                end = nxt.first_offset - 1
                break
        _append(out, StateBatch(position, end, top.delivery_state, top.delivery_count))
        position = end + 1
    return tuple(out)


def _append(out: list[StateBatch], batch: StateBatch) -> None:
    if out:
        last = out[-1]
        if last.last_offset + 1 == batch.first_offset and _priority(last) == _priority(batch):
            out[-1] = StateBatch(last.first_offset, batch.last_offset, last.delivery_state, last.delivery_count)
            return
    out.append(batch)
