"""KIP-890's verification across nodes (cluster mode): a TxnOffsetCommit on this node for a transaction another
node coordinates asks that node, over PostgreSQL (storage/pg/txn_verify.py), whether the group's offsets
partition is in the producer's ongoing transaction -- Kafka's AddPartitionsToTxnManager sending
AddPartitionsToTxn(verifyOnly) to the coordinator.

`verify` asks and waits for the answer up to `timeout_s`; no answer (no node hosts the transactional id's
partition now, a notification lost while a session reconnects) or PostgreSQL unreachable is NETWORK_EXCEPTION,
which TxnOffsetCommit answers as Kafka does, COORDINATOR_LOAD_IN_PROGRESS (the client retries). `notified`
answers the questions about transactional ids this node hosts, with TransactionCoordinator.verification.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.cluster.notify_calls import NotifyCalls
from storage.errors import StorageError
from storage.pg import txn_verify

log = structlog.get_logger(__name__)

TIMEOUT_S = 5.0


class LocalCoordinator(Protocol):
    def hosts(self, txn_id: str) -> bool: ...

    def verification(self, txn_id: str, producer_id: int, producer_epoch: int, topic: str,
                     partition: int) -> ErrorCode | None: ...


class RemoteVerification:
    def __init__(self, pool: Any, node_id: int, local: LocalCoordinator, *, timeout_s: float = TIMEOUT_S) -> None:
        self.pool = pool
        self.node_id = node_id
        self.local = local
        self.timeout_s = timeout_s
        self._calls: NotifyCalls[ErrorCode] = NotifyCalls()

    async def verify(self, txn_id: str, producer_id: int, producer_epoch: int, topic: str,
                     partition: int) -> ErrorCode | None:
        """The coordinating node's answer (TransactionCoordinator.verification's codes), NETWORK_EXCEPTION when
        none comes, or None when the id cannot be asked about (longer than a notification may carry)."""
        request_id, answered = self._calls.ask()
        try:
            payload = txn_verify.question(txn_verify.Question(self.node_id, request_id, producer_id, producer_epoch,
                                                              topic, partition, txn_id))
            if payload is None:
                return None
            await txn_verify.notify(self.pool, payload)
            async with asyncio.timeout(self.timeout_s):
                return await answered
        except (TimeoutError, StorageError) as exc:
            log.info("cluster.txn_verify.unanswered", transactional_id=txn_id, producer_id=producer_id,
                     error=repr(exc))
            return ErrorCode.network_exception
        finally:
            self._calls.done(request_id)

    def notified(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        """A notification of txn_verify.CHANNEL (any node's; asyncpg's listener signature)."""
        message = txn_verify.parse(payload)
        if message is None:
            log.warning("cluster.txn_verify.bad_notification", payload=payload[:100])
        elif isinstance(message, txn_verify.Answer):
            if message.node_id == self.node_id:
                self._calls.answered(message.request_id, _code(message.error_code))
        elif self.local.hosts(message.transactional_id):
            code = self.local.verification(message.transactional_id, message.producer_id, message.producer_epoch,
                                           message.topic, message.partition)
            if code is not None:
                self._calls.answer(self._answer(message, code))

    async def _answer(self, question: txn_verify.Question, code: ErrorCode) -> None:
        try:
            await txn_verify.notify(self.pool, txn_verify.answer(
                txn_verify.Answer(question.node_id, question.request_id, int(code))))
        except StorageError as exc:  # the asking node times out and answers a retriable error
            log.info("cluster.txn_verify.answer_failed", error=repr(exc))

    async def stop(self) -> None:
        await self._calls.stop()


def _code(value: int) -> ErrorCode:
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.unknown_server_error
