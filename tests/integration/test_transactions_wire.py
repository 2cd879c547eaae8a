"""The transaction coordinator over the wire, on the real server process: FindCoordinator type 1,
InitProducerId with a transactional id (epochs, fencing), AddPartitionsToTxn, transactional produce
(KIP-890 verification), EndTxn commit/abort with the markers in the partitions (read_committed sees
committed records only, aborted transactions listed), AddOffsetsToTxn, Describe/ListTransactions, the
coordinator's abort of a timed-out transaction, and a kill -9 with a transaction open."""

from __future__ import annotations

import signal
import time

import pytest
from kio.schema.errors import ErrorCode

from storage.control_records import read_marker
from tests.support.server_process import start_server
from tests.support.txn_wire import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    add_offsets,
    add_partitions,
    batches,
    describe,
    end_txn,
    fetch,
    find_txn_coordinator,
    init_producer_id,
    list_transactions,
    produce,
)
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration
TOPIC = "txn-topic"
E = ErrorCode


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    process = start_server(str(tmp_path_factory.mktemp("txn")), topics={TOPIC: 3},
                           overrides={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    yield process
    assert process.stop() == 0


def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"no {what} in {timeout}s")


def committed_view(client, partition: int) -> tuple[int, list]:
    """(last stable offset, batches) a read_committed consumer gets from offset 0."""
    answer = fetch(client, TOPIC, partition, 0, READ_COMMITTED)
    assert answer.error_code == E.none
    return answer.last_stable_offset, batches(answer.records)


def test_find_coordinator_names_this_node_for_a_transactional_id(server):
    with WireClient(server.host, server.port) as client:
        found = find_txn_coordinator(client, "some-txn")
        assert (found.error_code, found.port) == (E.none, server.port)


def test_init_producer_id_bumps_the_epoch_and_fences_the_older_producer(server):
    with WireClient(server.host, server.port) as client:
        first = init_producer_id(client, "fence-me")
        assert first.error_code == E.none and first.producer_epoch == 0
        second = init_producer_id(client, "fence-me")
        assert (second.error_code, second.producer_id, second.producer_epoch) == (E.none, first.producer_id, 1)
        # the zombie (epoch 0) is fenced
        codes = add_partitions(client, "fence-me", first.producer_id, 0, TOPIC, [0])
        assert codes == {(TOPIC, 0): E.producer_fenced}
        assert end_txn(client, "fence-me", first.producer_id, 0, True) == E.producer_fenced
        assert init_producer_id(client, "too-long", timeout_ms=900_001).error_code == E.invalid_transaction_timeout
        assert init_producer_id(client, "").error_code == E.invalid_request


def test_a_committed_transaction_becomes_visible_to_read_committed_after_its_markers(server):
    with WireClient(server.host, server.port) as client:
        init = init_producer_id(client, "committer")
        pid, epoch = init.producer_id, init.producer_epoch
        assert add_partitions(client, "committer", pid, epoch, TOPIC, [0, 1]) == {(TOPIC, 0): E.none,
                                                                                   (TOPIC, 1): E.none}
        assert produce(client, TOPIC, 0, [b"a", b"b"], txn_id="committer", pid=pid, epoch=epoch,
                       sequence=0).error_code == E.none
        # partition 2 was not added: KIP-890's verification refuses the batch
        refused = produce(client, TOPIC, 2, [b"x"], txn_id="committer", pid=pid, epoch=epoch, sequence=0)
        assert refused.error_code == E.invalid_txn_state
        lso, seen = committed_view(client, 0)
        assert lso == 0 and seen == []  # the open transaction holds the last stable offset
        raw = fetch(client, TOPIC, 0, 0, READ_UNCOMMITTED)
        assert [b.records_count for b in batches(raw.records)] == [2]
        (state,) = describe(client, "committer")
        assert (state.error_code, state.transaction_state) == (E.none, "Ongoing")
        assert sorted((t.topic, tuple(t.partitions)) for t in state.topics) == [(TOPIC, (0, 1))]
        assert end_txn(client, "committer", pid, epoch, True) == E.none
        lso, seen = wait_for(lambda: (v := committed_view(client, 0))[0] == 3 and v, what="the commit marker")
        assert [b.is_control for b in seen] == [False, True]
        marker = read_marker(seen[1])
        assert (marker.producer_id, marker.producer_epoch, marker.commit) == (pid, epoch, True)
        wait_for(lambda: describe(client, "committer")[0].transaction_state == "CompleteCommit",
                 what="CompleteCommit")
        # partition 1 was in the transaction without records: it still gets its marker
        assert [b.is_control for b in batches(fetch(client, TOPIC, 1, 0, READ_COMMITTED).records)] == [True]


def test_an_aborted_transaction_is_listed_for_read_committed_consumers(server):
    with WireClient(server.host, server.port) as client:
        init = init_producer_id(client, "aborter")
        pid, epoch = init.producer_id, init.producer_epoch
        start = fetch(client, TOPIC, 2, 0, READ_UNCOMMITTED).high_watermark
        assert add_partitions(client, "aborter", pid, epoch, TOPIC, [2]) == {(TOPIC, 2): E.none}
        assert produce(client, TOPIC, 2, [b"gone"], txn_id="aborter", pid=pid, epoch=epoch,
                       sequence=0).error_code == E.none
        assert end_txn(client, "aborter", pid, epoch, False) == E.none
        answer = wait_for(lambda: (a := fetch(client, TOPIC, 2, start, READ_COMMITTED)).last_stable_offset ==
                          start + 2 and a, what="the abort marker")
        assert [(t.producer_id, t.first_offset) for t in answer.aborted_transactions] == [(pid, start)]
        marker = read_marker(batches(answer.records)[-1])
        assert marker.commit is False
        (listed,) = list_transactions(client, producer_ids=(pid,)).transaction_states
        assert (listed.transactional_id, listed.transaction_state) == ("aborter", "CompleteAbort")


def test_add_offsets_to_txn_adds_the_groups_offsets_partition(server):
    with WireClient(server.host, server.port) as client:
        init = init_producer_id(client, "offsets-txn")
        pid, epoch = init.producer_id, init.producer_epoch
        assert add_offsets(client, "offsets-txn", pid, epoch, "txn-group") == E.none
        (state,) = describe(client, "offsets-txn")
        assert [t.topic for t in state.topics] == ["__consumer_offsets"]
        assert end_txn(client, "offsets-txn", pid, epoch, True) == E.none


def test_add_partitions_of_an_unknown_topic_is_refused_and_nothing_else_attempted(server):
    with WireClient(server.host, server.port) as client:
        init = init_producer_id(client, "unknown-topic")
        codes = add_partitions(client, "unknown-topic", init.producer_id, init.producer_epoch, TOPIC, [0, 7])
        assert codes == {(TOPIC, 0): E.operation_not_attempted, (TOPIC, 7): E.unknown_topic_or_partition}


def test_the_coordinator_aborts_a_transaction_past_its_timeout_and_fences_its_epoch(server):
    with WireClient(server.host, server.port) as client:
        init = init_producer_id(client, "slow", timeout_ms=1000)
        pid, epoch = init.producer_id, init.producer_epoch
        assert add_partitions(client, "slow", pid, epoch, TOPIC, [1]) == {(TOPIC, 1): E.none}
        wait_for(lambda: describe(client, "slow")[0].transaction_state == "CompleteAbort", timeout=15,
                 what="the timed-out transaction aborted")
        (state,) = describe(client, "slow")
        assert state.producer_epoch == epoch + 1  # bumped: the producer's epoch is fenced
        assert end_txn(client, "slow", pid, epoch, True) == E.producer_fenced


def test_a_transaction_open_at_a_kill_is_still_open_after_the_restart_and_can_commit(tmp_path):
    log_dir = str(tmp_path / "data")
    server = start_server(log_dir, topics={TOPIC: 1})
    try:
        with WireClient(server.host, server.port) as client:
            init = init_producer_id(client, "survivor")
            pid, epoch = init.producer_id, init.producer_epoch
            assert add_partitions(client, "survivor", pid, epoch, TOPIC, [0]) == {(TOPIC, 0): E.none}
            assert produce(client, TOPIC, 0, [b"kept"], txn_id="survivor", pid=pid, epoch=epoch,
                           sequence=0).error_code == E.none
        server.stop(signal.SIGKILL)
        server = start_server(log_dir, overrides={"listeners": f"PLAINTEXT://127.0.0.1:{server.port}"})
        with WireClient(server.host, server.port) as client:
            wait_for(lambda: describe(client, "survivor")[0].error_code == E.none, what="the partition loaded")
            (state,) = describe(client, "survivor")
            assert (state.transaction_state, state.producer_id, state.producer_epoch) == ("Ongoing", pid, epoch)
            assert committed_view(client, 0) == (0, [])  # still open in the partition after its own recovery
            assert end_txn(client, "survivor", pid, epoch, True) == E.none
            lso, seen = wait_for(lambda: (v := committed_view(client, 0))[0] == 2 and v, what="the marker")
            assert [b.is_control for b in seen] == [False, True]
    finally:
        server.stop()
