"""PostgreSQL fails over under a cluster: a primary with a synchronous streaming-replication standby, two nodes whose
storage.url lists both hosts with target_session_attrs=read-write (no address moves), and real clients
(confluent-kafka) committing offsets and producing with acks=all (tests/support/pg_failover.py). The primary is
killed (kill -9 of its postmaster) and the standby promoted (pg_ctl promote): commits and produces resume on the
promoted standby, every commit and produce that was acknowledged is there afterwards, the nodes never logged the
URL's password, and they stop cleanly."""

from __future__ import annotations

import time

import pytest

from tests.support.cluster import wait_until
from tests.support.pg_failover import RUN_AFTER_RESUME_S, check_nothing_acknowledged_lost, ha_cluster

pytestmark = pytest.mark.integration

PROMOTE_AFTER_S = 0.5  # how long the cluster runs with no primary (an HA manager's detection time)
RESUME_BOUND_S = 20.0  # after the promotion: a liveness bound (it takes about a second), not a speed target


def test_commits_resume_on_a_promoted_synchronous_standby_and_nothing_acknowledged_is_lost(tmp_path):
    with ha_cluster(tmp_path) as ha:
        clients = ha.clients
        killed = time.monotonic()
        ha.primary.kill()
        time.sleep(PROMOTE_AFTER_S)
        promoted = time.monotonic()
        ha.standby.promote()
        writable = time.monotonic()  # pg_ctl promote -w returned: the standby accepts writes
        wait_until(lambda: clients.resumed_after(promoted), RESUME_BOUND_S,
                   "commits and produces acknowledged after the promotion")
        time.sleep(RUN_AFTER_RESUME_S)
        clients.stop()
        commits_gap, produce_gap = clients.outage(killed)
        resumed = clients.first_after(writable)
        print(f"kill -9 of the primary, promoted {promoted - killed:.2f} s later (writable after "
              f"{writable - promoted:.2f} s): no acknowledged commit for {commits_gap:.2f} s, no delivery for "
              f"{produce_gap:.2f} s; the first {resumed[0] - writable:.2f} s / {resumed[1] - writable:.2f} s "
              "after the standby became writable")
        check_nothing_acknowledged_lost(ha)
