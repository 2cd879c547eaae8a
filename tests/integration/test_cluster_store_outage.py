"""PostgreSQL lost while a cluster node runs: OffsetCommit gets retriable errors, never a success for a write
PostgreSQL did not commit; once PostgreSQL is back, the same process recovers (re-takes its partitions,
reloads them from the committed rows) and commits succeed again -- no restart."""

from __future__ import annotations

import time

import pytest
from kio.schema.errors import ErrorCode

from tests.support.cluster import ClusterNodes, wait_until
from tests.support.offsets import commit_request, fetch_request
from tests.support.server_process import create_topics
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
        create_topics(node.host, node.port, {TP[0]: 1})  # commits to a topic not hosted are refused
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


def test_a_short_outage_ends_the_session_the_node_lets_go_and_comes_back(postgres_server, pg_url, tmp_path):
    """PostgreSQL down for less than the session still ends the node's session (and its session lock), so the
    others could end its lease at once: it lets go of everything, and when PostgreSQL is back it registers again
    and takes (reloads) its partitions; nothing acknowledged is lost."""
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        node = cluster.start(1)
        create_topics(node.host, node.port, {TP[0]: 1})  # commits to a topic not hosted are refused
        with WireClient(node.host, node.port, timeout=30) as client:
            wait_until(lambda: commit(client, 10) == ErrorCode.none, 30, "a first commit")
            with postgres_server.down():
                assert commit(client, 20) in RETRIABLE
                node.wait_for_event("cluster.session_ended", timeout=10)
            wait_until(lambda: commit(client, 30) == ErrorCode.none, 30, "commits succeed again")
            assert fetched(client) == (ErrorCode.none, 30)
        assert cluster.nodes[1].stop() == 0
    finally:
        cluster.close()


def test_a_write_postgresql_refuses_breaks_the_log_which_is_retaken_within_the_lease(postgres_server, pg_url,
                                                                                       tmp_path):
    """A failed append (here PostgreSQL refuses every new row; the session stays up) breaks the partition's log:
    the commit gets a retriable error, the supervisor unloads the partition and the Reconciler takes it again at a
    new epoch, reloaded from the committed rows."""
    cluster = ClusterNodes(pg_url, tmp_path)
    try:
        node = cluster.start(1)
        create_topics(node.host, node.port, {TP[0]: 1})  # commits to a topic not hosted are refused
        with WireClient(node.host, node.port, timeout=30) as client:
            wait_until(lambda: commit(client, 10) == ErrorCode.none, 30, "a first commit")
            cluster.query("ALTER TABLE kc_batches ADD CONSTRAINT refuse_all CHECK (false) NOT VALID")
            try:
                assert commit(client, 20) in RETRIABLE
                node.wait_for_event("cluster.partition.log_broken", timeout=10)
            finally:
                cluster.query("ALTER TABLE kc_batches DROP CONSTRAINT refuse_all")
            wait_until(lambda: commit(client, 30) == ErrorCode.none, 30, "commits succeed again")
            assert fetched(client) == (ErrorCode.none, 30)
            assert not node.events("cluster.session_ended")
        assert cluster.nodes[1].stop() == 0
    finally:
        cluster.close()
