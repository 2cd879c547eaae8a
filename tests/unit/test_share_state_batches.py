"""Kafka's PersisterStateBatchCombiner: pruning by the start offset, the higher (delivery count, state) wins
where batches overlap, equal neighbours join. Checked against a per-offset model and Kafka's own test cases
(PersisterStateBatchCombinerTest's shapes)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from coordinator.share.state_batches import combine, prune
from storage.share_state_records import StateBatch as B


def test_prune():
    batches = [B(0, 4, 2, 1), B(5, 9, 0, 1), B(10, 12, 4, 2)]
    assert prune(batches, -1) == batches
    assert prune(batches, 7) == [B(7, 9, 0, 1), B(10, 12, 4, 2)]
    assert prune(batches, 13) == []


def test_kafka_shapes():
    # same state, overlapping or contiguous: one batch
    assert combine([B(100, 110, 0, 1)], [B(105, 115, 0, 1)]) == (B(100, 115, 0, 1),)
    assert combine([B(100, 110, 0, 1)], [B(111, 115, 0, 1)]) == (B(100, 115, 0, 1),)
    # contiguous, different: two
    assert combine([B(100, 110, 0, 1)], [B(111, 115, 2, 1)]) == (B(100, 110, 0, 1), B(111, 115, 2, 1))
    # a higher delivery count inside: cuts the lower one in three
    assert combine([B(100, 110, 0, 1)], [B(105, 106, 0, 2)]) == (
        B(100, 104, 0, 1), B(105, 106, 0, 2), B(107, 110, 0, 1))
    # a lower one inside a higher one: gone
    assert combine([B(100, 110, 2, 3)], [B(105, 106, 0, 2)]) == (B(100, 110, 2, 3),)
    # same count: the higher state wins (ACKNOWLEDGED over AVAILABLE, ARCHIVED over ACKNOWLEDGED)
    assert combine([B(100, 110, 0, 1)], [B(100, 110, 2, 1)]) == (B(100, 110, 2, 1),)
    assert combine([B(100, 110, 4, 1)], [B(100, 105, 2, 1)]) == (B(100, 110, 4, 1),)
    # the start offset prunes what both bring
    assert combine([B(100, 110, 0, 1)], [B(108, 120, 2, 2)], start_offset=109) == (B(109, 120, 2, 2),)
    assert combine([], []) == ()


batch = st.tuples(st.integers(0, 30), st.integers(0, 8), st.sampled_from([0, 2, 4]), st.integers(0, 4)).map(
    lambda t: B(t[0], t[0] + t[1], t[2], t[3]))


@given(st.lists(batch, max_size=6), st.lists(batch, max_size=6), st.one_of(st.just(-1), st.integers(0, 40)))
def test_against_a_per_offset_model(current, new, start):
    best: dict[int, tuple[int, int]] = {}
    for b in current + new:
        for offset in range(b.first_offset, b.last_offset + 1):
            if start != -1 and offset < start:
                continue
            info = (b.delivery_count, b.delivery_state)
            best[offset] = max(best.get(offset, info), info)
    result = combine(current, new, start)
    covered = {o: (b.delivery_count, b.delivery_state)
               for b in result for o in range(b.first_offset, b.last_offset + 1)}
    assert covered == best
    for a, b in zip(result, result[1:]):  # in order, disjoint, and maximal
        assert a.last_offset < b.first_offset
        assert not (a.last_offset + 1 == b.first_offset and (a.delivery_count, a.delivery_state)
                    == (b.delivery_count, b.delivery_state))
