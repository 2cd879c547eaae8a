"""PostgreSQL lost while a cluster node runs: OffsetCommit gets retriable errors, never a success for a write
PostgreSQL did not commit; once PostgreSQL is back, the same process recovers (re-takes its partitions,
reloads them from the committed rows) and commits succeed again -- no restart."""

from __future__ import annotations

import time

import pytest
from kio.schema.errors import ErrorCode

from tests.support.cluster import ClusterNodes, wait_until
from tests.support.offsets import commit_request, fetch_request
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

GROUP = "outage"
TP = ("t", 0)
RETRIABLE = (ErrorCode.coordinator_not_available, ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress)


def commit(client: WireClient, offset: int) -> ErrorCode:
    return client.call(commit_request(8, GROUP, {TP: offset})).topics[0].partitions[0].error_code


def fetched(client: WireClient) -> tuple[ErrorCode, int]:
    group = client.call(fetch_request(8, GROUP, {TP[0]: [TP[1]]})).groups[0]
    return group.error_code, group.topics[0].partitions[0].committed_offset if group.topics else -1


def test_commits_fail_retriably_while_postgres_is_down_and_recover_without_restart(postgres_server, pg_url,
                                                                                     tmp_path):
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        node = cluster.start(1)
        with WireClient(node.host, node.port, timeout=30) as client:
            wait_until(lambda: commit(client, 10) == ErrorCode.none, 30, "a first commit")
            with postgres_server.down():  # past the session: the node loses its lease, not only its connections
                answers = []
                until = time.monotonic() + cluster.session_seconds + 1
                while time.monotonic() < until:
                    answers.append(commit(client, 20))
                    time.sleep(0.2)
            assert answers and all(code in RETRIABLE for code in answers), answers
            assert wait_until(lambda: fetched(client)[0] == ErrorCode.none and fetched(client), 60,
                              "the offsets partition reloaded after PostgreSQL came back") == (ErrorCode.none, 10)
            wait_until(lambda: commit(client, 30) == ErrorCode.none, 30, "commits succeed again")
            assert fetched(client) == (ErrorCode.none, 30)
        assert node.process.poll() is None  # the same process, never restarted
        assert cluster.nodes[1].stop() == 0
    finally:
        cluster.close()


def test_a_log_broken_by_a_short_outage_is_retaken_within_the_lease(postgres_server, pg_url, tmp_path):
    """PostgreSQL down for less than the session: the lease holds, but the commit in the outage breaks the
    partition's log; the supervisor unloads it and the Reconciler takes it again (a new epoch, reloaded)."""
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        node = cluster.start(1)
        with WireClient(node.host, node.port, timeout=30) as client:
            wait_until(lambda: commit(client, 10) == ErrorCode.none, 30, "a first commit")
            with postgres_server.down():
                assert commit(client, 20) in RETRIABLE
            node.wait_for_event("cluster.partition.log_broken", timeout=10)
            wait_until(lambda: commit(client, 30) == ErrorCode.none, 30, "commits succeed again")
            assert fetched(client) == (ErrorCode.none, 30)
        assert cluster.nodes[1].stop() == 0
    finally:
        cluster.close()
