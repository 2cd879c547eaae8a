"""The share-group state requests in cluster mode (Kafka's persister, PersisterStateManager): each goes to the
node that owns the share partition's `__share_group_state` partition -- this node's own ShareCoordinator when it
holds it, else that node over PostgreSQL (channel kc_share_state: storage/pg/share_state_calls.py).

The share partitions (coordinator/share/runtime/share_partitions.py) and the share-group offsets APIs call
`read` / `write` / `initialize` / `delete` / `summary` as they call the local ShareCoordinator in local mode.
As Kafka's persister does, a request that finds no coordinator (the topic being created, a partition without an
owner or moving, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, no answer within `answer_timeout_s`) is tried
again after `backoff_s`, until `deadline_s`; then COORDINATOR_NOT_AVAILABLE. The node holding the partition
answers the questions it hears for it (`notified`), whatever node asked; a question or answer too long for a
notification goes through a kc_share_state_bodies row, which the notification names (`calls.payload_of`,
`calls.take_body`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.cluster import share_state_codec as codec
from coordinator.cluster.notify_calls import NotifyCalls
from coordinator.cluster.view import NO_LEADER
from coordinator.share.runtime.share_coordinator import ShareCoordinator
from coordinator.share.state_store import Answer, WriteState
from rules.placement import SHARE_GROUP_STATE_TOPIC
from storage.errors import StorageError
from storage.pg import share_state_calls as calls

log = structlog.get_logger(__name__)

RETRIED = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
                     ErrorCode.coordinator_load_in_progress})


class ClusterShareState:
    """`topic`: the LazyInternalTopic of __share_group_state (ready(): exists, else its creation starts);
    `leader(partition)`: the node owning a __share_group_state partition now, as this node last saw (NO_LEADER:
    none)."""

    def __init__(self, pool: Any, node_id: int, local: ShareCoordinator, topic: Any,
                 leader: Callable[[int], int], *, answer_timeout_s: float = 2.0, backoff_s: float = 0.2,
                 deadline_s: float = 8.0) -> None:
        self.pool = pool
        self.node_id = node_id
        self.local = local
        self.topic = topic
        self.leader = leader
        self.answer_timeout_s = answer_timeout_s
        self.backoff_s = backoff_s
        self.deadline_s = deadline_s
        self.settings = local.settings
        self._calls: NotifyCalls[Answer] = NotifyCalls()
        self._locks: dict[tuple[str, uuid.UUID, int], tuple[asyncio.Lock, int]] = {}  # with how many use each

    # --- the persister's requests ----------------------------------------------------------------------

    async def read(self, group: str, topic_id: uuid.UUID, partition: int, leader_epoch: int) -> Answer:
        return await self._call("read", group, topic_id, partition,
                                dict(group=group, topic_id=topic_id, partition=partition, leader_epoch=leader_epoch))

    async def write(self, request: WriteState) -> Answer:
        return await self._call("write", request.group, request.topic_id, request.partition, dict(request=request))

    async def initialize(self, group: str, topic_id: uuid.UUID, partition: int, state_epoch: int,
                         start_offset: int) -> Answer:
        return await self._call("initialize", group, topic_id, partition,
                                dict(group=group, topic_id=topic_id, partition=partition, state_epoch=state_epoch,
                                     start_offset=start_offset))

    async def delete(self, group: str, topic_id: uuid.UUID, partition: int) -> Answer:
        return await self._call("delete", group, topic_id, partition,
                                dict(group=group, topic_id=topic_id, partition=partition))

    async def summary(self, group: str, topic_id: uuid.UUID, partition: int) -> Answer:
        return await self._call("summary", group, topic_id, partition,
                                dict(group=group, topic_id=topic_id, partition=partition))

    async def _call(self, operation: str, group: str, topic_id: uuid.UUID, partition: int,
                    args: dict[str, Any]) -> Answer:
        """One share partition's requests go one at a time (notifications on different connections could
        arrive out of order; the local coordinator decides them in the order of the calls)."""
        key = (group, topic_id, partition)
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                return await self._retried(operation, group, topic_id, partition, args)
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]  # nobody waits for it any more
            else:
                self._locks[key] = (lock, users - 1)

    async def _retried(self, operation: str, group: str, topic_id: uuid.UUID, partition: int,
                       args: dict[str, Any]) -> Answer:
        deadline = time.monotonic() + self.deadline_s
        while True:
            answer = await self._once(operation, group, topic_id, partition, args)
            if answer.error not in RETRIED or time.monotonic() + self.backoff_s >= deadline:
                break
            await asyncio.sleep(self.backoff_s)
        if answer.error in RETRIED:
            return Answer(ErrorCode.coordinator_not_available, answer.message)
        return answer

    async def _once(self, operation: str, group: str, topic_id: uuid.UUID, partition: int,
                    args: dict[str, Any]) -> Answer:
        if not self.topic.ready():  # Kafka: FindCoordinator creates __share_group_state, the persister retries
            return Answer(ErrorCode.coordinator_not_available, f"{SHARE_GROUP_STATE_TOPIC} is being created.")
        index = self.local.index_of(group, topic_id, partition)
        if index in self.local.partitions:
            return await getattr(self.local, operation)(**args)
        if self.leader(index) == NO_LEADER:
            return Answer(ErrorCode.coordinator_not_available, None)
        return await self._ask(index, codec.encode_call(operation, args))

    async def _ask(self, index: int, body: bytes) -> Answer:
        request_id, answered = self._calls.ask()
        try:
            asked = calls.Question(self.node_id, request_id, index, body)
            await calls.notify(self.pool, await calls.payload_of(self.pool, asked))
            async with asyncio.timeout(self.answer_timeout_s):
                return await answered
        except (TimeoutError, StorageError) as exc:
            log.info("cluster.share_state.unanswered", partition=index, error=repr(exc))
            return Answer(ErrorCode.coordinator_not_available, None)
        finally:
            self._calls.done(request_id)

    # --- answering -------------------------------------------------------------------------------------

    def notified(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        """A notification of calls.CHANNEL (any node's; asyncpg's listener signature)."""
        message = calls.parse(payload)
        if message is None:
            log.warning("cluster.share_state.bad_notification", payload=payload[:100])
        elif isinstance(message, calls.Answer):
            if message.node_id != self.node_id:
                return
            if message.stored is None:
                self._calls.answered(message.request_id, _decoded(message.body))
            else:
                self._calls.answer(self._take_answer(message))
        elif message.partition in self.local.partitions:
            self._calls.answer(self._answer(message))

    async def _take_answer(self, message: calls.Answer) -> None:
        """An answer whose body is in a row: taken, then given to the question (if it still waits)."""
        assert message.stored is not None
        try:
            body = await calls.take_body(self.pool, message.stored)
        except StorageError as exc:  # the question times out and is asked again
            log.info("cluster.share_state.answer_lost", error=repr(exc))
            return
        if body is not None:
            self._calls.answered(message.request_id, _decoded(body))

    async def _answer(self, question: calls.Question) -> None:
        try:
            body = question.body
            if question.stored is not None:
                taken = await calls.take_body(self.pool, question.stored)
                if taken is None:  # gone (older than its time to live): the asking node asks again
                    return
                body = taken
            try:
                operation, args = codec.decode_call(body)
                answer = await getattr(self.local, operation)(**args)
            except ValueError as exc:
                log.warning("cluster.share_state.bad_request", node=question.node_id, error=str(exc))
                answer = Answer(ErrorCode.invalid_request, str(exc))
            reply = calls.Answer(question.node_id, question.request_id, codec.encode_answer(answer))
            await calls.notify(self.pool, await calls.payload_of(self.pool, reply))
        except StorageError as exc:  # the asking node times out and tries again
            log.info("cluster.share_state.answer_failed", error=repr(exc))

    async def stop(self) -> None:
        await self._calls.stop()


def _decoded(body: bytes) -> Answer:
    try:
        return codec.decode_answer(body)
    except ValueError as exc:
        return Answer(ErrorCode.unknown_server_error, str(exc))
