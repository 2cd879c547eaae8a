"""When the membership's refresh task looks again: just after another node's lease expires, or at the latest
after one heartbeat interval."""

from __future__ import annotations

from coordinator.cluster.node_leases import EXPIRY_MARGIN_S, next_look_s


def test_alone_it_looks_every_heartbeat_interval():
    assert next_look_s(100.0, None, 2.0) == 2.0


def test_it_wakes_just_after_the_earliest_expiry_of_another_lease():
    assert next_look_s(100.0, 100.5, 2.0) == 0.5 + EXPIRY_MARGIN_S


def test_a_far_expiry_still_looks_every_heartbeat_and_a_past_one_at_once():
    assert next_look_s(100.0, 109.0, 2.0) == 2.0
    assert next_look_s(100.0, 99.0, 2.0) == EXPIRY_MARGIN_S
