"""A share partition (Kafka's SharePartition) on a fake clock: acquire / acknowledge / lock expiry / the
delivery count limit / max record locks / acquire modes / read_committed / rollback / reload from the
persisted state."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
from kio.schema.errors import ErrorCode

from coordinator.share.record_states import AckBatch, AckType, AcquiredRecords as AR, AcquireMode, LogBatch, RecordState
from coordinator.share.share_partition import SharePartition
from coordinator.share.state_batches import combine
from storage.share_state_records import StateBatch as B
from tests.support.examples import examples

ACCEPT, RELEASE, REJECT, GAP, RENEW = (AckType.ACCEPT, AckType.RELEASE, AckType.REJECT, AckType.GAP,
                                       AckType.RENEW)


def log(*ranges: tuple[int, int]) -> list[LogBatch]:
    return [LogBatch(a, b) for a, b in ranges]


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, tuple(int(t) for t in types))


def test_two_members_share_one_partition():
    p = SharePartition(0, lock_duration_ms=1000)
    got_a, change = p.acquire("a", log((0, 4), (5, 9)), max_records=3, batch_size=100, now_ms=0)
    assert got_a == [AR(0, 4, 1)] and change.persist is None  # batch-optimized: the whole first batch
    assert p.next_fetch_offset() == 5
    got_b, _ = p.acquire("b", log((0, 4), (5, 9)), max_records=100, batch_size=100, now_ms=0)
    assert got_b == [AR(5, 9, 1)]  # a's records are passed over
    assert p.acquire("c", log((0, 9)), 100, 100, 0)[0] == []


def test_accept_moves_the_start_offset_and_persists():
    p = SharePartition(0)
    p.acquire("a", log((0, 9)), 100, 100, 0)
    result = p.acknowledge("a", [ack(0, 3, ACCEPT), ack(5, 5, REJECT)], 1)
    assert result.error == ErrorCode.none and result.change is not None
    assert p.start_offset == 4
    assert result.change.persist is not None
    assert result.change.persist.start_offset == 4
    assert result.change.persist.state_batches == (B(5, 5, 4, 1),)  # 0-3 are below the start offset
    assert result.change.persist.delivery_complete_count == 1


def test_release_redelivers_with_count_two_and_reject_never_again():
    p = SharePartition(0)
    p.acquire("a", log((0, 2)), 100, 100, 0)
    p.acknowledge("a", [ack(0, 2, RELEASE, REJECT, ACCEPT)], 1)
    assert p.records[0].state is RecordState.AVAILABLE and p.start_offset == 0
    got, _ = p.acquire("b", log((0, 2)), 100, 100, 2)
    assert got == [AR(0, 0, 2)]
    p.acknowledge("b", [ack(0, 0, ACCEPT)], 3)
    assert p.start_offset == 3 and p.records == {}


def test_lock_expiry_and_the_delivery_count_limit():
    p = SharePartition(0, delivery_count_limit=2, lock_duration_ms=100)
    p.acquire("a", log((0, 1)), 100, 100, now_ms=0)
    assert p.next_lock_deadline() == 100
    assert p.expire_locks(99) is None
    change = p.expire_locks(100)
    assert change is not None and change.persist is not None
    assert change.persist.state_batches == (B(0, 1, 0, 1),)
    got, _ = p.acquire("b", log((0, 1)), 100, 100, now_ms=200)
    assert got == [AR(0, 1, 2)]
    change = p.expire_locks(300)  # the second delivery reached the limit: archived
    assert change is not None and p.start_offset == 2 and p.records == {}
    assert p.acquire("c", log((0, 1)), 100, 100, 400)[0] == []


def test_renew_keeps_the_lock_and_release_at_limit_archives():
    p = SharePartition(0, delivery_count_limit=1, lock_duration_ms=100)
    p.acquire("a", log((0, 1)), 100, 100, 0)
    renewed = p.acknowledge("a", [ack(0, 0, RENEW)], 90)
    assert renewed.change is not None and renewed.change.persist is None  # nothing durable changed
    p.expire_locks(100)
    # the renewed record is still held; the other's lock ran out at the limit (1 delivery): archived
    assert p.records[0].state is RecordState.ACQUIRED and p.records[1].state is RecordState.ARCHIVED
    assert p.next_lock_deadline() == 190
    p.acknowledge("a", [ack(0, 0, RELEASE)], 150)
    assert p.records == {} and p.start_offset == 2  # count 1 = limit: archived on release too
    assert p.next_lock_deadline() is None


def test_invalid_acknowledgements_change_nothing():
    p = SharePartition(0)
    p.acquire("a", log((0, 4)), 100, 100, 0)
    for batches in ([ack(3, 5, ACCEPT)], [ack(0, 0, ACCEPT), ack(2, 2, ACCEPT)] and [ack(0, 1, ACCEPT)],):
        assert p.acknowledge("b", batches, 1).error == ErrorCode.invalid_record_state  # not b's
    assert p.acknowledge("a", [ack(0, 0, ACCEPT), ack(5, 5, ACCEPT)], 1).error == ErrorCode.invalid_record_state
    assert all(r.state is RecordState.ACQUIRED for r in p.records.values()) and p.start_offset == 0
    p.acknowledge("a", [ack(0, 0, ACCEPT)], 1)
    assert p.acknowledge("a", [ack(0, 0, ACCEPT)], 1).error == ErrorCode.invalid_record_state  # done already


def test_gaps_and_holes_are_archived():
    p = SharePartition(0)
    got, _ = p.acquire("a", log((0, 1), (5, 6)), 100, 100, 0)  # 2-4 are not in the log
    assert got == [AR(0, 1, 1), AR(5, 6, 1)]
    assert [p.records[o].state for o in (2, 3, 4)] == [RecordState.ARCHIVED] * 3
    p.acknowledge("a", [ack(0, 1, ACCEPT), ack(5, 6, GAP)], 1)
    assert p.start_offset == 7


def test_max_record_locks():
    p = SharePartition(0, max_in_flight=4)
    got, _ = p.acquire("a", log((0, 9)), 100, 100, 0)
    assert got == [AR(0, 3, 1)] and not p.can_acquire()
    p.acknowledge("a", [ack(0, 0, RELEASE)], 1)
    assert p.can_acquire()  # an AVAILABLE record inside the window
    assert p.acquire("b", log((0, 9)), 100, 100, 2)[0] == [AR(0, 0, 2)]
    p.acknowledge("a", [ack(1, 2, ACCEPT)], 3)
    p.acknowledge("b", [ack(0, 0, ACCEPT)], 3)
    assert p.acquire("b", log((3, 9)), 100, 100, 4)[0] == [AR(4, 6, 1)]


def test_acquire_modes_and_batch_size():
    batches = log((0, 4), (5, 9), (10, 14))
    p = SharePartition(0)
    assert p.acquire("a", batches, max_records=7, batch_size=100, now_ms=0)[0] == [AR(0, 9, 1)]
    p = SharePartition(0)
    got, _ = p.acquire("a", batches, max_records=7, batch_size=100, now_ms=0, mode=AcquireMode.RECORD_LIMIT)
    assert got == [AR(0, 6, 1)] and p.end_offset == 7
    p = SharePartition(0)
    got, _ = p.acquire("a", batches, max_records=100, batch_size=5, now_ms=0)
    assert got == [AR(0, 4, 1), AR(5, 9, 1), AR(10, 14, 1)]  # cut at batch boundaries every BatchSize records
    p = SharePartition(0)
    assert p.acquire("a", batches, max_records=100, batch_size=8, now_ms=0)[0] == [AR(0, 9, 1), AR(10, 14, 1)]


def test_read_committed_archives_aborted_and_control_batches():
    batches = [LogBatch(0, 1, 7, True), LogBatch(2, 2, 7, True, True),  # aborted txn of producer 7, its marker
               LogBatch(3, 4, 8, True), LogBatch(5, 5, 8, True, True),  # committed txn of producer 8
               LogBatch(6, 6)]
    p = SharePartition(0)
    got, change = p.acquire("a", batches, 100, 100, 0, read_committed=True, aborted=((7, 0),))
    assert got == [AR(3, 4, 1), AR(6, 6, 1)]
    assert p.start_offset == 3  # the aborted records and the markers are done
    p = SharePartition(0)
    got, _ = p.acquire("a", batches, 100, 100, 0, read_committed=False, aborted=((7, 0),))
    assert got == [AR(0, 1, 1), AR(3, 4, 1), AR(6, 6, 1)]  # read_uncommitted: the aborted ones too


def test_initialized_from_persisted_state():
    p = SharePartition(10, (B(8, 11, 2, 1), B(12, 12, 0, 2), B(15, 16, 4, 1)), state_epoch=3)
    assert p.start_offset == 12 and p.end_offset == 17
    assert p.records[12].delivery_count == 2 and p.records[13].delivery_count == 0  # 13-14: never persisted
    got, _ = p.acquire("a", log((12, 20)), 100, 100, 0)
    assert got == [AR(12, 12, 3), AR(13, 14, 1), AR(17, 20, 1)]


def test_rollback_of_a_failed_persist():
    p = SharePartition(0)
    p.acquire("a", log((0, 3)), 100, 100, 0)
    result = p.acknowledge("a", [ack(0, 3, ACCEPT)], 1)
    assert p.start_offset == 4
    assert result.change is not None
    p.rollback(result.change)
    assert p.start_offset == 0 and [r.state for r in p.records.values()] == [RecordState.ACQUIRED] * 4
    assert p.acknowledge("a", [ack(0, 3, ACCEPT)], 2).error == ErrorCode.none


def test_member_leaving_and_log_start_moving():
    p = SharePartition(0)
    p.acquire("a", log((0, 3)), 100, 100, 0)
    change = p.release_member("a")
    assert change is not None and all(r.state is RecordState.AVAILABLE for r in p.records.values())
    change = p.move_log_start(2)
    assert change is not None and change.persist is not None and change.persist.start_offset == 2
    assert p.start_offset == 2 and list(p.records) == [2, 3]


ops = st.lists(st.tuples(st.sampled_from(["acquire", "ack", "expire", "leave"]), st.sampled_from("ab"),
                         st.integers(0, 30), st.integers(1, 6), st.sampled_from([1, 2, 3, 4])), max_size=30)


@settings(max_examples=examples(80), deadline=None)
@given(ops)
def test_what_is_durable_survives_a_restart(history):
    """A crash at any point: the state rebuilt from the persisted writes never redelivers a record that was
    acknowledged or archived, and the window stays contiguous."""
    p = SharePartition(0, delivery_count_limit=3, lock_duration_ms=50)
    durable_start, durable = 0, ()
    now = 0
    done: set[int] = set()
    for op, member, offset, length, kind in history:
        now += 10
        if op == "acquire":
            _, change = p.acquire(member, log((0, 9), (10, 19), (20, 40)), length, 3, now)
        elif op == "ack":
            batch = ack(offset, offset + length - 1, kind)
            result = p.acknowledge(member, [batch], now)
            change = result.change
        elif op == "expire":
            change = p.expire_locks(now)
        else:
            change = p.release_member(member)
        if change is not None and change.persist is not None:
            durable_start = change.persist.start_offset
            durable = combine(durable, change.persist.state_batches, durable_start)
        done |= {o for o in range(0, p.start_offset)} | {o for o, r in p.records.items() if r.state.terminal}
        assert list(p.records) == list(range(p.start_offset, p.end_offset))
    reloaded = SharePartition(durable_start, durable)
    got, _ = reloaded.acquire("z", log((0, 9), (10, 19), (20, 40)), 1000, 1000, now)
    redelivered = {o for r in got for o in range(r.first_offset, r.last_offset + 1)}
    assert not redelivered & done
