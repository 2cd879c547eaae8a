"""Channel kc_share_state: the share-group state requests of a share partition's leader to the node that owns the
share partition's __share_group_state partition (cluster mode).

In Kafka a share partition's leader sends ReadShareGroupState / WriteShareGroupState (and a group coordinator
InitializeShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary) to the share coordinator, a broker
found by FindCoordinator. Nodes here share PostgreSQL only (no connections or credentials between them), so the
question and its answer are NOTIFYs on this channel, as kc_txn_verify's are:

    q:<asking node>:<request id>:<__share_group_state partition>:<body>
    a:<asking node>:<request id>:<body>

Every node hears every notification; the node hosting the named partition answers, the asking node takes the
answer. The body (the request or the answer, encoded by the caller) is zlib-compressed and base64-encoded here. A
NOTIFY payload must stay below 8000 bytes: a body longer than that (a share partition with many thousand state
batches) is stored in kc_share_state_bodies and the payload names its row instead (`@<id>` for the body); the one
node the question or answer is for takes the row (`take_body`). Rows nobody took (the asking node gone, the
partition moved meanwhile) are deleted after STORED_BODY_TTL by the next `store_body`. Nothing else is stored: an
unanswered question is asked again by the share partition's next request.
"""

from __future__ import annotations

import base64
import zlib
from typing import NamedTuple

import structlog

from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import Executor

CHANNEL = "kc_share_state"
QUESTION, ANSWER = "q", "a"
MAX_PAYLOAD_BYTES = 7900
STORED = "@"  # a body field naming a kc_share_state_bodies row
STORED_BODY_TTL = "5 minutes"

log = structlog.get_logger(__name__)


class Question(NamedTuple):
    node_id: int
    request_id: int
    partition: int  # of __share_group_state
    body: bytes
    stored: int | None = None  # the body is in this kc_share_state_bodies row (`body` is empty until taken)


class Answer(NamedTuple):
    node_id: int
    request_id: int
    body: bytes
    stored: int | None = None


def _pack(body: bytes) -> str:
    return base64.b64encode(zlib.compress(body)).decode("ascii")


def _fits(payload: str) -> str | None:
    return payload if len(payload) <= MAX_PAYLOAD_BYTES else None


def _body(message: Question | Answer) -> str:
    return f"{STORED}{message.stored}" if message.stored is not None else _pack(message.body)


def question(q: Question) -> str | None:
    """The payload asking `q`; None when it is too long for a notification (store the body: `store_body`)."""
    return _fits(f"{QUESTION}:{q.node_id}:{q.request_id}:{q.partition}:{_body(q)}")


def answer(a: Answer) -> str | None:
    """The payload answering; None when it is too long for a notification (store the body: `store_body`)."""
    return _fits(f"{ANSWER}:{a.node_id}:{a.request_id}:{_body(a)}")


def parse(payload: str) -> Question | Answer | None:
    """The question or answer in `payload` (a stored body: `stored` set, `body` empty); None if malformed."""
    try:
        if payload.startswith(QUESTION + ":"):
            node, request, partition, body = payload[2:].split(":", 3)
            return Question(int(node), int(request), int(partition), *_parsed_body(body))
        if payload.startswith(ANSWER + ":"):
            node, request, body = payload[2:].split(":", 2)
            return Answer(int(node), int(request), *_parsed_body(body))
    except (ValueError, zlib.error):
        return None
    return None


def _parsed_body(text: str) -> tuple[bytes, int | None]:
    if text.startswith(STORED):
        return b"", int(text[1:])
    return _unpack(text), None


def _unpack(text: str) -> bytes:
    return zlib.decompress(base64.b64decode(text.encode("ascii"), validate=True))


async def payload_of(executor: Executor, message: Question | Answer) -> str:
    """The notification payload of `message`, its body stored in a kc_share_state_bodies row first when it is too
    long for one (StoreUnavailableError when PostgreSQL is unavailable)."""
    payload = _payload(message)
    if payload is None:
        payload = _payload(message._replace(body=b"", stored=await store_body(executor, message.body)))
        assert payload is not None  # a row id always fits
    return payload


def _payload(message: Question | Answer) -> str | None:
    return question(message) if isinstance(message, Question) else answer(message)


async def notify(executor: Executor, payload: str) -> None:
    """NOTIFY kc_share_state (StoreUnavailableError when PostgreSQL is)."""
    with unavailable_as_store_error("ask or answer a share-group state request"):
        await executor.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)


async def store_body(executor: Executor, body: bytes) -> int:
    """Store a body too long for a notification (zlib-compressed); returns the row id its payload names. Rows older
    than STORED_BODY_TTL (never taken) go first."""
    with unavailable_as_store_error("store a share-group state request or answer"):
        await executor.execute(
            f"DELETE FROM kc_share_state_bodies WHERE stored_at < now() - interval '{STORED_BODY_TTL}'")
        return int(await executor.fetchval("INSERT INTO kc_share_state_bodies (body) VALUES ($1) RETURNING id",
                                           zlib.compress(body)))


async def take_body(executor: Executor, stored: int) -> bytes | None:
    """The body of row `stored`, deleted as it is read; None when it is gone, or does not decompress (written by
    something other than a node: the question or answer is then lost, as a gone one, and asked again)."""
    with unavailable_as_store_error("take a share-group state request or answer"):
        data = await executor.fetchval("DELETE FROM kc_share_state_bodies WHERE id = $1 RETURNING body", stored)
    if data is None:
        return None
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        log.warning("storage.pg.share_state_body_corrupt", row=stored, error=str(exc), action="dropped")
        return None
