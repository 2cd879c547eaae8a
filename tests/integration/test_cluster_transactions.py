"""Transactions in cluster mode, two server processes on one PostgreSQL: `__transaction_state` created at the
first transactional FindCoordinator and spread over the nodes; a transaction coordinated on one node whose
partitions (a topic partition and the group's offsets partition) the other node holds commits -- its markers
go through kc_txn_markers, and the other node verifies its TxnOffsetCommit with it over kc_txn_verify; and a
kill -9 of the coordinator mid-transaction: the other node takes the `__transaction_state` partition (loaded
from PostgreSQL) and EndTxn there commits the transaction."""

from __future__ import annotations

import time

import pytest
from kio.schema.errors import ErrorCode

from rules.placement import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, partition_for, transaction_partition_for
from storage.control_records import read_marker
from tests.integration.test_txn_offsets_wire import codes, txn_commit
from tests.support.cluster import OFFSETS_PARTITIONS, ClusterNodes, wait_until
from tests.support.offsets import fetch_request, fetched, wait_loaded
from tests.support.server_process import create_topics
from tests.support.txn_wire import (
    READ_COMMITTED,
    add_offsets,
    add_partitions,
    batches,
    describe,
    end_txn,
    fetch,
    find_txn_coordinator,
    init_producer_id,
    produce,
)
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

E = ErrorCode
TOPIC = "txn-cluster"
PARTITIONS = 4
TXN_PARTITIONS = 4


def start(pg_url, tmp_path) -> ClusterNodes:
    cluster = ClusterNodes(pg_url, tmp_path, **{"transaction.state.log.num.partitions": str(TXN_PARTITIONS)})
    nodes = cluster.start_all(2)
    create_topics(nodes[0].host, nodes[0].port, {TOPIC: PARTITIONS})
    return cluster


def lookup(cluster: ClusterNodes, node_id: int, txn_id: str) -> int:
    """FindCoordinator (key type 1) through `node_id` until it names a coordinator; returns its node id."""
    node = cluster.nodes[node_id]

    def found() -> int | None:
        with WireClient(node.host, node.port) as client:
            answer = find_txn_coordinator(client, txn_id)
        assert answer.error_code in (E.none, E.coordinator_not_available), answer
        return answer.node_id if answer.error_code == E.none else None

    return wait_until(found, 20, f"a coordinator for {txn_id}")


def txn_id_coordinated_by(owners: dict, node_id: int) -> str:
    return next(f"txn-{i}" for i in range(10_000)
                if owners[(TRANSACTION_STATE_TOPIC, transaction_partition_for(f"txn-{i}", TXN_PARTITIONS))][0]
                == node_id)


def client_of(cluster: ClusterNodes, node_id: int) -> WireClient:
    node = cluster.nodes[node_id]
    return WireClient(node.host, node.port)


def committed(cluster: ClusterNodes, node_id: int, partition: int) -> list:
    """The batches a read_committed consumer gets from partition `partition` (held by `node_id`)."""
    with client_of(cluster, node_id) as client:
        answer = fetch(client, TOPIC, partition, 0, READ_COMMITTED)
    assert answer.error_code == E.none, answer
    return batches(answer.records)


def wait_for_state(cluster: ClusterNodes, node_id: int, txn_id: str, state: str) -> None:
    def reached() -> bool:
        with client_of(cluster, node_id) as client:
            (found,) = describe(client, txn_id)
        return found.error_code == E.none and found.transaction_state == state

    wait_until(reached, 20, f"{txn_id} in {state}")


def test_the_transaction_state_topic_is_created_at_the_first_lookup_and_spread(pg_url, tmp_path):
    cluster = start(pg_url, tmp_path)
    try:
        assert not cluster.query("SELECT 1 FROM kc_topics WHERE name = $1", TRANSACTION_STATE_TOPIC)
        with client_of(cluster, 2) as client:  # the first lookup: the topic is only being created
            assert find_txn_coordinator(client, "first").error_code == E.coordinator_not_available
        assert lookup(cluster, 2, "first") in (1, 2)
        (row,) = cluster.query("SELECT partitions, internal FROM kc_topics WHERE name = $1", TRANSACTION_STATE_TOPIC)
        assert (row["partitions"], row["internal"]) == (TXN_PARTITIONS, True)
        owners = cluster.settled({1, 2})
        assert {owner for (name, _), (owner, _) in owners.items() if name == TRANSACTION_STATE_TOPIC} == {1, 2}
        for node_id in (1, 2):
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()


def test_a_transaction_coordinated_on_one_node_commits_into_the_other_nodes_partitions(pg_url, tmp_path):
    cluster = start(pg_url, tmp_path)
    try:
        lookup(cluster, 1, "warm-up")
        owners = cluster.settled({1, 2})
        txn_id = txn_id_coordinated_by(owners, 1)
        assert lookup(cluster, 2, txn_id) == 1
        remote = next(p for p in range(PARTITIONS) if owners[(TOPIC, p)][0] == 2)
        local = next(p for p in range(PARTITIONS) if owners[(TOPIC, p)][0] == 1)
        group = next(f"g-{i}" for i in range(10_000)
                     if owners[(OFFSETS_TOPIC, partition_for(f"g-{i}", OFFSETS_PARTITIONS))][0] == 2)
        with client_of(cluster, 1) as coordinator:
            init = init_producer_id(coordinator, txn_id)
            assert init.error_code == E.none
            pid, epoch = init.producer_id, init.producer_epoch
            assert add_partitions(coordinator, txn_id, pid, epoch, TOPIC, [remote, local]) == {
                (TOPIC, remote): E.none, (TOPIC, local): E.none}
            assert add_offsets(coordinator, txn_id, pid, epoch, group) == E.none
            for partition, node_id in ((remote, 2), (local, 1)):
                with client_of(cluster, node_id) as leader:
                    written = produce(leader, TOPIC, partition, [b"a", b"b"], txn_id=txn_id, pid=pid, epoch=epoch,
                                      sequence=0)
                assert written.error_code == E.none, written
            assert committed(cluster, 2, remote) == []  # the open transaction holds the last stable offset
            assert end_txn(coordinator, txn_id, pid, epoch, True) == E.none
        # CompleteCommit only once every marker was written: the other node's topic and offsets partitions too
        wait_for_state(cluster, 1, txn_id, "CompleteCommit")
        for partition, node_id in ((remote, 2), (local, 1)):
            seen = committed(cluster, node_id, partition)
            assert [b.is_control for b in seen] == [False, True]
            marker = read_marker(seen[1])
            assert (marker.producer_id, marker.producer_epoch, marker.commit) == (pid, epoch, True)
        offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
        offsets_id = cluster.query("SELECT topic_id FROM kc_topics WHERE name = $1", OFFSETS_TOPIC)[0]["topic_id"]
        assert cluster.query("SELECT count(*) AS n FROM kc_batches WHERE topic_id = $1 AND partition = $2",
                             offsets_id, offsets_partition)[0]["n"] >= 1  # the offsets marker, written by node 2
        assert cluster.query("SELECT count(*) AS n FROM kc_txn_markers")[0]["n"] == 0
        for node_id in (1, 2):
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()


def test_after_a_kill_9_of_the_coordinator_the_other_node_takes_the_transaction_and_commits_it(pg_url,
                                                                                               tmp_path):
    cluster = start(pg_url, tmp_path)
    try:
        lookup(cluster, 1, "warm-up")
        owners = cluster.settled({1, 2})
        txn_id = txn_id_coordinated_by(owners, 1)
        partition = next(p for p in range(PARTITIONS) if owners[(TOPIC, p)][0] == 2)
        with client_of(cluster, 1) as coordinator:
            init = init_producer_id(coordinator, txn_id)
            pid, epoch = init.producer_id, init.producer_epoch
            assert add_partitions(coordinator, txn_id, pid, epoch, TOPIC, [partition]) == {(TOPIC, partition): E.none}
        with client_of(cluster, 2) as leader:
            assert produce(leader, TOPIC, partition, [b"kept"], txn_id=txn_id, pid=pid, epoch=epoch,
                           sequence=0).error_code == E.none
        cluster.kill(1)
        killed_at = time.monotonic()
        txn_partition = transaction_partition_for(txn_id, TXN_PARTITIONS)
        wait_until(lambda: cluster.owners()[(TRANSACTION_STATE_TOPIC, txn_partition)][0] == 2, 20,
                   "node 2 owns the transaction's __transaction_state partition")
        assert lookup(cluster, 2, txn_id) == 2
        wait_for_state(cluster, 2, txn_id, "Ongoing")  # loaded from PostgreSQL as node 1 wrote it

        def ended() -> bool:
            with client_of(cluster, 2) as coordinator:
                code = end_txn(coordinator, txn_id, pid, epoch, True)
            assert code in (E.none, E.coordinator_load_in_progress, E.not_coordinator), code
            return code == E.none

        wait_until(ended, 20, "EndTxn on the new coordinator")
        wait_for_state(cluster, 2, txn_id, "CompleteCommit")
        seen = committed(cluster, 2, partition)
        assert [b.is_control for b in seen] == [False, True] and read_marker(seen[1]).commit is True
        print("committed on the new coordinator", round(time.monotonic() - killed_at, 2), "s after the kill")
        assert cluster.nodes[2].stop() == 0
    finally:
        cluster.close()


def test_a_txn_offset_commit_is_verified_by_the_node_coordinating_its_transaction(pg_url, tmp_path):
    """KIP-890 across nodes: the group's offsets partition on node 2, the transaction coordinated by node 1; a
    TxnOffsetCommit on node 2 for a group the transaction never added is refused with Kafka's error (node 1's
    answer, over PostgreSQL), and accepted once AddOffsetsToTxn added it."""
    cluster = start(pg_url, tmp_path)
    try:
        lookup(cluster, 1, "warm-up")
        owners = cluster.settled({1, 2})
        txn_id = txn_id_coordinated_by(owners, 1)
        group = next(f"g-{i}" for i in range(10_000)
                     if owners[(OFFSETS_TOPIC, partition_for(f"g-{i}", OFFSETS_PARTITIONS))][0] == 2)
        with client_of(cluster, 1) as coordinator, client_of(cluster, 2) as holder:
            init = init_producer_id(coordinator, txn_id)
            assert init.error_code == E.none
            pid, epoch = init.producer_id, init.producer_epoch
            assert add_partitions(coordinator, txn_id, pid, epoch, TOPIC, [0]) == {(TOPIC, 0): E.none}
            wait_loaded(holder, group)

            def commit(version: int, offset: int) -> dict:
                return codes(holder.call(txn_commit(version, pid, epoch, {0: offset}, group=group, topic=TOPIC,
                                                    txn_id=txn_id)))

            assert commit(4, 5) == {(TOPIC, 0): E.transaction_abortable}
            assert commit(3, 5) == {(TOPIC, 0): E.invalid_txn_state}
            assert add_offsets(coordinator, txn_id, pid, epoch, group) == E.none
            assert commit(4, 7) == {(TOPIC, 0): E.none}

            def stable() -> tuple:
                answer = holder.call(fetch_request(8, group, {TOPIC: [0]}, require_stable=True))
                offset, _error, _metadata, code = fetched(answer.groups[0].topics)[(TOPIC, 0)]
                return offset, code

            assert stable() == (-1, E.unstable_offset_commit)
            assert end_txn(coordinator, txn_id, pid, epoch, True) == E.none
            wait_until(lambda: stable() == (7, E.none), 20, "the committed offset")
        for node_id in (1, 2):
            assert cluster.nodes[node_id].stop() == 0
    finally:
        cluster.close()
