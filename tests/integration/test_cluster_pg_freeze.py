"""A PostgreSQL primary that freezes without closing a connection (SIGSTOP of its postmaster and every process it
started: to its clients it looks like a host lost or cut off, except that its kernel still acknowledges what they
send, so no TCP setting can tell), under two nodes and real clients committing and producing
(tests/support/pg_failover.py); its synchronous standby is promoted. Each node must give up every connection to the
frozen primary within the documented bound (its session's probe unanswered for a third of
broker.session.timeout.ms, probed every second), reach the promoted standby and serve again: commits and produces
resume, and nothing acknowledged is lost. When the old primary thaws (SIGCONT), no node is connected to it or
connects to it, and nothing the nodes sent it became visible there that the promoted standby does not have."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from coordinator.cluster.session import PROBE_EVERY_S, answer_within_s
from tests.support.cluster import HEARTBEAT_MS, SESSION_MS, wait_until
from tests.support.pg_failover import RUN_AFTER_RESUME_S, check_nothing_acknowledged_lost, established_to, ha_cluster

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # bound by wall-clock time: run alone

PROMOTE_AFTER_S = 0.5  # how long the cluster runs with no primary (an HA manager's detection time)
# docs/CLUSTER.md: a node gives up a silent primary within answer_within_s + PROBE_EVERY_S (2 s at the tests' 3 s
# session timeout, 4 s at the default 9 s), and serves again on a promoted standby that is writable by then within
# RETAKE_S more.
RETAKE_S = 3.0
THAWED_S = 3.0  # how long the clients go on after the old primary thawed
ROWS = "SELECT topic_id || '/' || partition || '/' || base_offset || '/' || md5(data) FROM kc_batches"


@pytest.mark.parametrize(("heartbeat_ms", "session_ms"), [(HEARTBEAT_MS, SESSION_MS), (2000, 9000)],
                         ids=["test-timings", "default-timings"])
def test_a_frozen_primary_is_given_up_within_the_bound_and_gets_no_write_when_it_thaws(tmp_path, heartbeat_ms,
                                                                                         session_ms):
    timings = {"broker.heartbeat.interval.ms": str(heartbeat_ms), "broker.session.timeout.ms": str(session_ms)}
    with ha_cluster(tmp_path, **timings) as ha:
        primary, standby, cluster, clients = ha
        given_up_s = answer_within_s(session_ms) + PROBE_EVERY_S
        nodes = [cluster.nodes[node_id].process.pid for node_id in (1, 2)]
        frozen, frozen_at = time.monotonic(), time.time()
        primary.freeze()
        time.sleep(PROMOTE_AFTER_S)
        standby.promote()
        writable = time.monotonic()  # pg_ctl promote -w returned: the standby accepts writes
        wait_until(lambda: clients.resumed_after(writable), 60, "commits and produces acknowledged after it")
        wait_until(lambda: not any(established_to(pid, primary.port) for pid in nodes), 30,
                   "every connection of the nodes to the frozen primary given up")
        time.sleep(RUN_AFTER_RESUME_S)
        primary.thaw()
        time.sleep(THAWED_S)
        assert not any(established_to(pid, primary.port) for pid in nodes), "a node connected to the old primary"
        clients.stop()

        commits_gap, produce_gap = clients.outage(frozen)
        gave_up = [datetime.fromisoformat(cluster.nodes[node_id].wait_for_event("cluster.session_unanswered")
                                          ["timestamp"]).timestamp() - frozen_at for node_id in (1, 2)]
        print(f"primary frozen, promoted {writable - frozen:.2f} s later; the nodes gave it up after "
              f"{gave_up[0]:.2f} s / {gave_up[1]:.2f} s (bound {given_up_s:.1f} s); no acknowledged commit for "
              f"{commits_gap:.2f} s, no delivery for {produce_gap:.2f} s (bound {given_up_s + RETAKE_S:.1f} s)")
        assert max(gave_up) <= given_up_s + 0.5  # (+ the log line's own delay)
        assert max(commits_gap, produce_gap) <= given_up_s + RETAKE_S
        check_nothing_acknowledged_lost(ha)

        database = cluster.settings["storage.url"].rpartition("/")[2].partition("?")[0]
        backends = primary.sql("SELECT state || ' ' || coalesce(wait_event, '-') || ' ' "
                               "|| regexp_replace(left(query, 60), '\\s+', ' ', 'g') "
                               "FROM pg_stat_activity WHERE backend_type = 'client backend' "
                               "AND pid <> pg_backend_pid()").splitlines()
        print(f"the thawed old primary's client backends: {backends}")
        # Statements the nodes sent before they gave it up, run now: commits waiting for a synchronous standby that
        # is gone (SyncRep), or statements waiting for their locks (e.g. a lease update behind a renewal that waits
        # so). None is idle: an idle backend would be a connection some client still holds open.
        assert all(backend.startswith("active ") for backend in backends), backends
        only_there = set(primary.sql(ROWS, database).split()) - set(standby.sql(ROWS, database).split())
        assert not only_there, f"{len(only_there)} rows visible on the old primary only"
