"""TxnOffsetCommit v0-v4: a transaction's offsets, pending in the group's offsets partition until its marker.

KafkaApis.handleTxnOffsetCommitRequest: WRITE on the transactional id (else every partition
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (else GROUP_AUTHORIZATION_FAILED), READ on each topic
(else its partitions TOPIC_AUTHORIZATION_FAILED); unknown topics and partitions UNKNOWN_TOPIC_OR_PARTITION; the
rest goes to the coordinator (GroupCoordinatorService.commitTransactionalOffsets: INVALID_GROUP_ID for an empty
group id; OffsetMetadataManager.commitTransactionalOffset: coordinator/offsets/txn_commit.py's checks, metadata
too large per partition). The records are written as one transactional batch with the producer's id and epoch
(runtime/txn_offsets.py) and answered once durable. Before v2, COORDINATOR_LOAD_IN_PROGRESS is answered
COORDINATOR_NOT_AVAILABLE (clients before KAFKA-7296 do not expect it).

KIP-890 part 1 (CoordinatorRuntime.scheduleTransactionalWriteOperation -> ReplicaManager's transaction
verification): unless the producer already has a transaction open in the group's offsets partition
(UnifiedLog.hasOngoingTransaction: pending offsets here), the transaction coordinator must confirm that the
offsets partition is in the producer's ongoing transaction (AddOffsetsToTxn added it). Its refusal answers every
partition, mapped as AddPartitionsToTxnManager and CoordinatorPartitionWriter do: TRANSACTION_ABORTABLE from v4
(the clients that know it), INVALID_TXN_STATE before; PRODUCER_FENCED as INVALID_PRODUCER_EPOCH; the others as
they are (INVALID_PRODUCER_ID_MAPPING, CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS...). Without it, one
TxnOffsetCommit for a partition never added left offsets pending for ever: no marker ever came for them (the
transaction coordinator sends markers only to the partitions of the transaction), and every read_committed
consumer of the group stalled on UNSTABLE_OFFSET_COMMIT. A transaction this node coordinates is verified by a
call, in the same loop turn as the write: nothing can end the transaction in between. One another node
coordinates (cluster mode) is asked over PostgreSQL (cluster/txn_verification.py: no answer is
NETWORK_EXCEPTION, answered COORDINATOR_LOAD_IN_PROGRESS as Kafka's handleOperationException does); a marker
of the producer written into the offsets partition while the question is out makes the commit fail with
INVALID_TXN_STATE (Kafka's verification guard).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from kio.schema.errors import ErrorCode

from coordinator.completion import settled
from coordinator.errors import commit_error_code
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import Dispatcher, RequestContext
from coordinator.offsets.known_topics import AnswerRow, merge_answers, split_unknown
from coordinator.offsets.manager import DEFAULT_RETENTION, commit_records, error_answer
from coordinator.offsets.txn_commit import producer_epoch_error, txn_commit_error
from coordinator.runtime.group_coordinator import GroupCoordinator
from coordinator.runtime.txn_offsets import ShardTxnOffsets
from coordinator.runtime.writes import PendingWrite
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import nested_class
from rules.placement import OFFSETS_TOPIC

if TYPE_CHECKING:
    from protocol.request_types import TxnOffsetCommitRequest, TxnOffsetCommitV0, TxnOffsetCommitV1, TxnOffsetCommitV2

log = structlog.get_logger("coordinator.offsets.txn")

E = ErrorCode
TXN_EPOCH_FROM = 2  # committed_leader_epoch
TXN_MEMBER_FROM = 3  # generation, member id, group instance id
TXN_LOAD_ERROR_FROM = 2
TXN_ABORTABLE_FROM = 4  # KIP-890: CoordinatorPartitionWriter's genericError from v4, defaultError before



class TxnVerifier(Protocol):
    """What the handler uses of the TransactionCoordinator: the answer of this node's coordinator to a
    verification of (transactional id, producer id, producer epoch, topic, partition) -- None when another node
    coordinates it -- and, in cluster mode, the question to that node."""

    remote_verification: Callable[[str, int, int, str, int], Awaitable[ErrorCode | None]] | None

    def verification(self, txn_id: str, producer_id: int, producer_epoch: int, topic: str,
                     partition: int) -> ErrorCode | None: ...


def verification_error(code: ErrorCode | None, version: int) -> ErrorCode | None:
    """The coordinator's answer to a verification as TxnOffsetCommit answers it at `version` (None: go on)."""
    if code is None or code is E.none:
        return None
    if code is E.producer_fenced:
        return E.invalid_producer_epoch  # AddPartitionsToTxnManager: producers expect this one
    if code is E.network_exception:
        return E.coordinator_load_in_progress  # CoordinatorOperationExceptionHelper: older clients retry it
    if code is E.transaction_abortable and version < TXN_ABORTABLE_FROM:
        return E.invalid_txn_state
    return code


_UNASKED: Any = object()  # commit's verdict before the transaction coordinator was asked


_CLASSES = API_TABLE[ApiKey.TXN_OFFSET_COMMIT].responses
_TOPIC = _CLASSES.derived(lambda cls: nested_class(cls, "topics"))
_PARTITION = _TOPIC.derived(lambda cls: nested_class(cls, "partitions"))


def txn_response(version: int, answer: list[AnswerRow]) -> Any:
    """The response to an answer [(topic, indexes, codes or None: all NONE)] (commit_records' form)."""
    topic_cls, partition_cls = _TOPIC[version], _PARTITION[version]
    old_client = version < TXN_LOAD_ERROR_FROM
    topics = []
    for name, indexes, codes in answer:
        parts = []
        for index, code in zip(indexes, codes or [E.none] * len(indexes)):
            if old_client and code is E.coordinator_load_in_progress:
                code = E.coordinator_not_available
            parts.append(partition_cls(partition_index=index, error_code=code))
        topics.append(topic_cls(name=name, partitions=tuple(parts)))
    return _CLASSES[version](throttle_time=NO_THROTTLE, topics=tuple(topics))


class TxnOffsetCommitHandler:
    def __init__(self, groups: GroupCoordinator, partition_counts: dict[str, int],
                 access: Access | None = None, txn: TxnVerifier | None = None) -> None:
        self.shard_for = groups.shard_for
        self.settings = groups.settings
        self.partition_counts = partition_counts
        self.access = access
        self.txn = txn  # None: no transaction coordinator to ask (unit tests of the rest)

    def handle(self, ctx: RequestContext, request: TxnOffsetCommitRequest) -> Any:
        version = ctx.api_version
        access = self.access
        denied: list[Any] = []  # kio's topics of the request's version
        if access is not None and access.enabled:
            if not access.allows(ctx, Op.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
                return txn_response(version, error_answer(request.topics, E.transactional_id_authorization_failed))
            if not access.group(ctx, Op.READ, request.group_id):
                return txn_response(version, error_answer(request.topics, E.group_authorization_failed))
            denied = [t for t in request.topics if not access.topic(ctx, Op.READ, t.name)]
        return self.commit(version, request, denied)

    def commit(self, version: int, request: TxnOffsetCommitRequest, denied: list[Any],
               verdict: ErrorCode | None = _UNASKED) -> Any:
        """`verdict`: the verification's error for every partition (None: none), once the coordinator was asked."""
        topics: list[Any] = list(request.topics)  # of the version's nested topic class
        refused: list[AnswerRow] = []
        if denied:
            names = {t.name for t in denied}
            topics = [t for t in topics if t.name not in names]
            refused = error_answer(denied, E.topic_authorization_failed)
        split = split_unknown(topics, self.partition_counts)
        if split is not None:
            topics, unknown = split
            refused += unknown
        if not topics:
            return txn_response(version, refused)
        try:
            if verdict is _UNASKED:
                asked = self.ask(version, request)
                if isinstance(asked, Coroutine):  # another node's answer first
                    return self.when_verified(version, request, denied, asked)
                verdict = asked
            answer, write = self.coordinate(version, request, topics, verdict)
        except Exception:
            log.exception("TxnOffsetCommit failed", group=request.group_id)
            return txn_response(version, merge_answers(refused, error_answer(topics, E.unknown_server_error)))
        if write is None:
            return txn_response(version, merge_answers(refused, answer))

        def written(_written: Any = None) -> Any:
            return txn_response(version, merge_answers(refused, answer))

        def failed(error: BaseException) -> Any:
            code = commit_error_code(error)
            log.warning("transactional offset commit failed", group=request.group_id, error=repr(error),
                        code=code.name)
            return txn_response(version, merge_answers(refused, [
                (name, indexes, [code] * len(indexes) if codes is None else [code if c is E.none else c for c in codes])
                for name, indexes, codes in answer]))

        return write.then(written, failed)

    async def when_verified(self, version: int, request: TxnOffsetCommitRequest, denied: list[Any],
                            asked: Coroutine[Any, Any, ErrorCode | None]) -> Any:
        try:
            verdict = await asked
        except Exception:
            log.exception("TxnOffsetCommit's verification failed", group=request.group_id)
            verdict = E.unknown_server_error
        return await settled(self.commit(version, request, denied, verdict))

    def coordinate(self, version: int, request: TxnOffsetCommitRequest, topics: list[Any],
                   verdict: ErrorCode | None) -> tuple[list[AnswerRow], PendingWrite | None]:
        """The coordinator's part: (the answer, the write to wait for or None)."""
        group_id = request.group_id
        if not group_id:
            return error_answer(topics, E.invalid_group_id), None
        shard = self.shard_for(group_id)
        generation: int
        if version >= TXN_MEMBER_FROM:
            if TYPE_CHECKING:  # annotations only (no code on the request's path)
                assert not isinstance(request, TxnOffsetCommitV0 | TxnOffsetCommitV1 | TxnOffsetCommitV2)
            member_id, instance_id, generation = request.member_id, request.group_instance_id, request.generation_id
        else:
            member_id, instance_id, generation = "", None, -1
        code = (shard.error or verdict
                or txn_commit_error(shard, group_id, member_id, instance_id, generation, version)
                or producer_epoch_error(shard, request.producer_id, request.producer_epoch))
        if code is not None:
            return error_answer(topics, code), None
        records, answer, tails = commit_records(group_id, topics, shard.scheduler.wall_ms(), DEFAULT_RETENTION,
                                                self.settings.offset_metadata_max_bytes, version >= TXN_EPOCH_FROM)
        if not records:
            return answer, None
        return answer, shard.txn.write(request.producer_id, request.producer_epoch, records, tails)

    def ask(self, version: int,
            request: TxnOffsetCommitRequest) -> ErrorCode | None | Coroutine[Any, Any, ErrorCode | None]:
        """The verification's error for every partition (None: the offsets may be written), or the coroutine
        that asks the node coordinating the transaction (see the module docstring)."""
        txn = self.txn
        if txn is None or not request.group_id:
            return None
        shard = self.shard_for(request.group_id)
        producer_id = request.producer_id
        if shard.error is not None or producer_id in shard.offsets.txn.by_producer:
            return None  # UnifiedLog.maybeStartTransactionVerification: an ongoing transaction here is not verified
        question = (request.transactional_id, producer_id, request.producer_epoch, OFFSETS_TOPIC, shard.partition)
        code = txn.verification(*question)
        if code is None and txn.remote_verification is not None:
            return self.ask_remote(version, shard.txn, producer_id, txn.remote_verification(*question))
        return verification_error(code, version)

    @staticmethod
    async def ask_remote(version: int, offsets: ShardTxnOffsets, producer_id: int,
                         answer: Awaitable[ErrorCode | None]) -> ErrorCode | None:
        guard = offsets.guard(producer_id)
        try:
            code = await answer
        finally:
            still_valid = offsets.release(producer_id, guard)
        if not still_valid and (code is None or code is E.none):
            return E.invalid_txn_state  # the producer's marker came meanwhile: its transaction is over here
        return verification_error(code, version)


def register(dispatcher: Dispatcher, services: Services) -> None:
    handler = TxnOffsetCommitHandler(services.groups, services.topics.partition_counts, services.access,
                                     services.txn)
    dispatcher.register(ApiKey.TXN_OFFSET_COMMIT, handler.handle)
