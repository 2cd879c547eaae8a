"""Channel kc_txn_verify: KIP-890's verification of a transaction by the node that coordinates it (cluster mode).

A partition leader in Kafka asks the transaction coordinator whether a partition is in a producer's ongoing
transaction (AddPartitionsToTxn, verifyOnly). Nodes here share PostgreSQL only, so the question and its answer
are NOTIFYs on this channel (no table: an unanswered question is asked again by the client's retry):

    v:<asking node>:<request id>:<producer id>:<producer epoch>:<topic>:<partition>:<transactional id>
    a:<asking node>:<request id>:<error code>

Every node hears every notification; the node hosting the transactional id's __transaction_state partition
answers a question, the asking node takes the answer. A topic name has no ':', the transactional id comes last
(it may); a NOTIFY payload must stay below 8000 bytes, so ids longer than MAX_ID_BYTES are not asked about.
"""

from __future__ import annotations

from typing import NamedTuple

from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import Executor

CHANNEL = "kc_txn_verify"
QUESTION, ANSWER = "v", "a"
MAX_ID_BYTES = 7000


class Question(NamedTuple):
    node_id: int
    request_id: int
    producer_id: int
    producer_epoch: int
    topic: str
    partition: int
    transactional_id: str


class Answer(NamedTuple):
    node_id: int
    request_id: int
    error_code: int


def question(q: Question) -> str | None:
    """The payload asking `q`; None when the transactional id is too long for a notification."""
    if len(q.transactional_id.encode()) > MAX_ID_BYTES:
        return None
    return (f"{QUESTION}:{q.node_id}:{q.request_id}:{q.producer_id}:{q.producer_epoch}:{q.topic}:{q.partition}:"
            f"{q.transactional_id}")


def answer(a: Answer) -> str:
    return f"{ANSWER}:{a.node_id}:{a.request_id}:{a.error_code}"


def parse(payload: str) -> Question | Answer | None:
    """The question or answer in `payload`; None if malformed."""
    try:
        if payload.startswith(QUESTION + ":"):
            node, request, pid, epoch, topic, partition, txn_id = payload[2:].split(":", 6)
            return Question(int(node), int(request), int(pid), int(epoch), topic, int(partition), txn_id)
        if payload.startswith(ANSWER + ":"):
            node, request, code = payload[2:].split(":")
            return Answer(int(node), int(request), int(code))
    except ValueError:
        return None
    return None


async def notify(executor: Executor, payload: str) -> None:
    """NOTIFY kc_txn_verify (StoreUnavailableError when PostgreSQL is)."""
    with unavailable_as_store_error("ask or answer a transaction verification"):
        await executor.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)
