"""KIP-890's verification of a transaction another node coordinates (cluster mode): the question and answer over
a channel (storage/pg/txn_verify.py, cluster/txn_verification.py; here an in-memory stand-in for PostgreSQL's
NOTIFY, which delivers every notification to every listening node), and TxnOffsetCommit asking it -- Kafka's
answers per version, no answer as COORDINATOR_LOAD_IN_PROGRESS, and a marker of the producer written while the
question is out voiding the answer (the verification guard)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from coordinator.cluster.txn_verification import RemoteVerification
from rules.placement import transaction_partition_for
from storage.pg import txn_verify
from storage.pg.errors import StoreUnavailableError
from tests.support.txn_node import OFFSETS, TxnNode, commit, request, stable_fetch

E = ErrorCode
GROUP = "g"


class Channel:
    """PostgreSQL's NOTIFY on one channel, as the nodes' pools and LISTENing sessions see it."""

    def __init__(self) -> None:
        self.nodes: list[RemoteVerification] = []
        self.down = False
        self.sent: list[str] = []

    async def execute(self, query: str, channel: str, payload: str) -> str:
        assert "pg_notify" in query and channel == txn_verify.CHANNEL
        if self.down:
            raise StoreUnavailableError("PostgreSQL unavailable")
        self.sent.append(payload)
        loop = asyncio.get_running_loop()
        for node in self.nodes:  # delivered after the sender's transaction, to every listener
            loop.call_soon(node.notified, None, 0, channel, payload)
        return "SELECT 1"


def node_on(channel: Channel, node_id: int, local, timeout_s: float = 2.0) -> RemoteVerification:
    node = RemoteVerification(channel, node_id, local, timeout_s=timeout_s)
    channel.nodes.append(node)
    return node


class Nowhere:
    """A node that coordinates no transaction."""

    def hosts(self, _txn_id: str) -> bool:
        return False

    def verification(self, *_args) -> None:
        raise AssertionError("asked although it hosts nothing")


async def test_the_node_coordinating_the_transaction_answers(tmp_path):
    async with TxnNode(tmp_path) as coordinating:
        channel = Channel()
        asking = node_on(channel, 1, Nowhere())
        node_on(channel, 2, coordinating.txn)
        pid, epoch = await coordinating.begin("tx", [("t", 0)])
        assert await asking.verify("tx", pid, epoch, *OFFSETS(GROUP)) is E.transaction_abortable
        assert await asking.verify("tx", pid, epoch, "t", 0) is E.none
        assert await asking.verify("tx", pid, epoch + 1, "t", 0) is E.producer_fenced
        assert await asking.verify("tx:with:colons", pid, epoch, "t", 0) is E.invalid_producer_id_mapping
        assert all(p.startswith(("v:", "a:")) for p in channel.sent)


async def test_no_answer_or_no_postgresql_is_a_network_exception_and_long_ids_are_not_asked():
    channel = Channel()
    asking = node_on(channel, 1, Nowhere(), timeout_s=0.05)
    assert await asking.verify("tx", 7, 0, "t", 0) is E.network_exception  # nobody hosts it
    channel.down = True
    assert await asking.verify("tx", 7, 0, "t", 0) is E.network_exception
    assert await asking.verify("x" * (txn_verify.MAX_ID_BYTES + 1), 7, 0, "t", 0) is None
    asking.notified(None, 0, txn_verify.CHANNEL, "v:garbage")  # logged and dropped
    assert not asking._calls.waiting


def test_payloads_read_back():
    q = txn_verify.Question(3, 9, 1000, 2, "__consumer_offsets", 17, "id:with:colons")
    assert txn_verify.parse(txn_verify.question(q)) == q
    a = txn_verify.Answer(3, 9, int(E.concurrent_transactions))
    assert txn_verify.parse(txn_verify.answer(a)) == a
    assert txn_verify.parse("a:1:x:0") is None and txn_verify.parse("q:1") is None


def remote_id(node: TxnNode) -> str:
    """A transactional id whose __transaction_state partition this node does not host (partition 1 of 2)."""
    return next(f"tx-{i}" for i in range(1000) if transaction_partition_for(f"tx-{i}", 2) == 1)


@pytest.mark.parametrize("answer, version, answered", [
    (E.transaction_abortable, 4, E.transaction_abortable),
    (E.transaction_abortable, 3, E.invalid_txn_state),
    (E.producer_fenced, 4, E.invalid_producer_epoch),
    (E.network_exception, 4, E.coordinator_load_in_progress),
    (E.network_exception, 1, E.coordinator_not_available),
    (E.concurrent_transactions, 4, E.concurrent_transactions),
])
async def test_txn_offset_commit_answers_the_other_nodes_refusal_as_kafka(tmp_path, answer, version, answered):
    async with TxnNode(tmp_path, txn_partitions=2, hosted=[0]) as node:
        asked = []

        async def remote(*question) -> ErrorCode:
            asked.append(question)
            return answer

        node.txn.remote_verification = remote
        txn_id = remote_id(node)
        assert await commit(node.txn_offset_handler(), version, txn_id, 4242, 0) is answered
        assert asked == [(txn_id, 4242, 0, *OFFSETS(GROUP))]
        assert not node.pending(GROUP)


async def test_a_marker_written_while_the_question_is_out_voids_the_answer(tmp_path):
    async with TxnNode(tmp_path, txn_partitions=2, hosted=[0]) as node:
        release = asyncio.Event()

        async def remote(*_question) -> ErrorCode:
            await release.wait()
            return E.none

        node.txn.remote_verification = remote
        handler, txn_id = node.txn_offset_handler(), remote_id(node)
        waiting = asyncio.ensure_future(handler.handle(SimpleNamespace(api_version=4), request(4, txn_id, 4242, 0)))
        await asyncio.sleep(0.01)
        await node.groups.complete_transaction(OFFSETS(GROUP)[1], 4242, 0, False, 0)  # e.g. a timed-out abort
        release.set()
        answer = await waiting
        assert [p.error_code for t in answer.topics for p in t.partitions] == [E.invalid_txn_state]
        assert not node.pending(GROUP)
        # asked again, with no marker meanwhile: written, pending until its marker
        assert await commit(handler, 4, txn_id, 4242, 0) is E.none
        assert stable_fetch(node.groups, GROUP) == [(0, -1, E.unstable_offset_commit)]
