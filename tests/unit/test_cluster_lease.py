"""The local lease lapse rule, on a fake monotonic clock."""

from __future__ import annotations

from coordinator.cluster.lease import LocalLease


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_lease_before_the_first_grant():
    assert LocalLease(9000, Clock()).lapsed()


def test_valid_until_the_renew_was_sent_plus_the_session():
    clock = Clock()
    lease = LocalLease(9000, clock)
    sent = clock.now
    clock.now += 0.5  # the answer arrives later; the lease counts from the send
    assert lease.granted(sent)
    assert lease.valid_until == sent + 9.0
    clock.now = sent + 8.999
    assert not lease.lapsed() and abs(lease.remaining_s() - 0.001) < 1e-9
    clock.now = sent + 9.0
    assert lease.lapsed() and lease.remaining_s() == 0.0


def test_each_renew_moves_the_deadline():
    clock = Clock()
    lease = LocalLease(1500, clock)
    lease.granted(clock.now)
    clock.now += 1.0
    assert lease.granted(clock.now)
    clock.now += 1.4
    assert not lease.lapsed()


def test_a_renew_slower_than_the_session_counts_as_lapsed():
    clock = Clock()
    lease = LocalLease(1500, clock)
    sent = clock.now
    clock.now += 1.6
    assert not lease.granted(sent)
    assert lease.lapsed()


def test_a_renew_answered_after_the_previous_lease_lapsed_does_not_heal_the_gap():
    clock = Clock()
    lease = LocalLease(1500, clock)
    lease.granted(clock.now)
    clock.now += 1.4
    sent = clock.now
    clock.now += 0.2  # the old lease lapsed at +1.5 while this renew was in flight
    assert not lease.granted(sent)
    assert lease.lapsed()


def test_drop_forgets_the_lease_and_a_new_grant_starts_over():
    clock = Clock()
    lease = LocalLease(1500, clock)
    lease.granted(clock.now)
    clock.now += 2.0
    lease.drop()
    assert lease.lapsed()
    assert lease.granted(clock.now) and not lease.lapsed()
