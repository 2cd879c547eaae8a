"""Channel kc_share_state: the share-group state requests of a share partition's leader to the node that owns the
share partition's __share_group_state partition (cluster mode).

In Kafka a share partition's leader sends ReadShareGroupState / WriteShareGroupState (and a group coordinator
InitializeShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary) to the share coordinator, a broker
found by FindCoordinator. Nodes here share PostgreSQL only (no connections or credentials between them), so the
question and its answer are NOTIFYs on this channel, as kc_txn_verify's are:

    q:<asking node>:<request id>:<__share_group_state partition>:<body>
    a:<asking node>:<request id>:<body>

Every node hears every notification; the node hosting the named partition answers, the asking node takes the
answer. The body (the request or the answer, encoded by the caller) is zlib-compressed and base64-encoded here; a
NOTIFY payload must stay below 8000 bytes, so a body longer than that is refused (`None`) and the caller answers
an error instead. Nothing is stored: an unanswered question is asked again by the share partition's next request.
"""

from __future__ import annotations

import base64
import zlib
from typing import NamedTuple

from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import Executor

CHANNEL = "kc_share_state"
QUESTION, ANSWER = "q", "a"
MAX_PAYLOAD_BYTES = 7900


class Question(NamedTuple):
    node_id: int
    request_id: int
    partition: int  # of __share_group_state
    body: bytes


class Answer(NamedTuple):
    node_id: int
    request_id: int
    body: bytes


def _pack(body: bytes) -> str:
    return base64.b64encode(zlib.compress(body)).decode("ascii")


def _fits(payload: str) -> str | None:
    return payload if len(payload) <= MAX_PAYLOAD_BYTES else None


def question(q: Question) -> str | None:
    """The payload asking `q`; None when it is too long for a notification."""
    return _fits(f"{QUESTION}:{q.node_id}:{q.request_id}:{q.partition}:{_pack(q.body)}")


def answer(a: Answer) -> str | None:
    """The payload answering; None when it is too long for a notification."""
    return _fits(f"{ANSWER}:{a.node_id}:{a.request_id}:{_pack(a.body)}")


def parse(payload: str) -> Question | Answer | None:
    """The question or answer in `payload`; None if malformed."""
    try:
        if payload.startswith(QUESTION + ":"):
            node, request, partition, body = payload[2:].split(":", 3)
            return Question(int(node), int(request), int(partition), _unpack(body))
        if payload.startswith(ANSWER + ":"):
            node, request, body = payload[2:].split(":", 2)
            return Answer(int(node), int(request), _unpack(body))
    except (ValueError, zlib.error):
        return None
    return None


def _unpack(text: str) -> bytes:
    return zlib.decompress(base64.b64decode(text.encode("ascii"), validate=True))


async def notify(executor: Executor, payload: str) -> None:
    """NOTIFY kc_share_state (StoreUnavailableError when PostgreSQL is)."""
    with unavailable_as_store_error("ask or answer a share-group state request"):
        await executor.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)
