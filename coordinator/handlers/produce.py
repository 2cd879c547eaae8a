"""Produce v3-v11: validate each partition's batch on its bytes, assign offsets, append.

Follows KafkaApis.handleProduceRequest and ReplicaManager.appendRecords:

* transactional batches in a request without a transactional id, or whose principal may not
  WRITE that TransactionalId (with an authorizer) -> TRANSACTIONAL_ID_AUTHORIZATION_FAILED for
  every partition (Kafka's answer, checked first);
* acks outside {-1, 0, 1} -> INVALID_REQUIRED_ACKS for every partition;
* transactional batches follow Kafka's producer-state rules (data_plane/appends.py and
  producer_state.py; the request's transactional id reaches the plane's txn_verifier);
* an unknown topic is created first when auto.create.topics.enable (Kafka itself only
  auto-creates on Metadata; clients always ask Metadata before producing, so this only
  matters to hand-written clients); otherwise, or for an unknown partition,
  UNKNOWN_TOPIC_OR_PARTITION; the internal topic -> INVALID_TOPIC_EXCEPTION; a partition of a known
  topic not hosted here (cluster mode) -> NOT_LEADER_OR_FOLLOWER;
* every rejected batch leaves its log untouched; other partitions are unaffected,
  except that the request's batches share one budget of record bytes to walk
  (message.max.decompressed.bytes): a batch past what is left is INVALID_RECORD;
* a partition listed more than once (under one topic entry or two) is appended once, with its
  last listing's batch, and answered once at its first place: Kafka keys a Produce's
  partitions in a map (handleProduceRequest);
* acks=0: no response; if any partition failed the connection is closed, as Kafka
  does so that the producer refreshes its metadata. Until its appends are written
  the request still counts as outstanding on its connection (a silent Completion), so
  that a connection with queued.max.requests unflushed acks=0 requests stops being
  read: without it memory grew without bound while the disk was slower than the
  network. A write that fails closes the connection, as any acks=0 failure;
* acks=1: answered once offsets are assigned; acks=-1: once the appends are durable
  under log.flush.policy (a failed flush -> KAFKA_STORAGE_ERROR for that partition).
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode

from coordinator.completion import Completion, settled
from coordinator.data_plane import DataPlane
from coordinator.data_plane.ownership import not_hosted_error
from coordinator.data_plane.validation import WalkBudget
from coordinator.errors import InvalidTopic, KafkaError, UnknownTopicOrPartition, error_code_for
from coordinator.handlers.wire_values import NO_THROTTLE
from coordinator.net.dispatch import CloseConnection, Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.security.acl_model import ResourceType
from coordinator.services import Services
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build
from storage.errors import RecordError, StorageError

if TYPE_CHECKING:
    from protocol.request_types import ProduceRequest

_TRANSACTIONAL_BYTE = 22  # low byte of the attributes int16
_UTC = datetime.UTC


def _is_transactional(records: bytes | None) -> bool:
    return records is not None and len(records) > _TRANSACTIONAL_BYTE and bool(records[_TRANSACTIONAL_BYTE] & 0x10)


def _append_time(ms: int) -> datetime.datetime | None:
    return None if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000, tz=_UTC)


class PartitionData(Protocol):
    """A partition of a Produce request (kio's class of the request's version)."""

    @property
    def index(self) -> int: ...

    @property
    def records(self) -> bytes | None: ...


class TopicData(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def partition_data(self) -> Iterable[PartitionData]: ...


def _partitions_once(topic_data: Iterable[TopicData]) -> list[tuple[str, list[PartitionData]]]:
    """(topic, partition data) with each (topic, partition) once: its last listing, at its first place."""
    by_topic: dict[str, dict[int, PartitionData]] = {}
    for topic in topic_data:
        parts = by_topic.setdefault(topic.name, {})
        for pd in topic.partition_data:
            parts[pd.index] = pd  # a dict keeps a key's first place when its value is replaced
    return [(name, list(parts.values())) for name, parts in by_topic.items()]


def _silent_until_written(futures: list[asyncio.Future[None]]) -> Completion | None:
    """No answer (None) once every future is done; until then the request stays outstanding."""
    if not futures:
        return None
    answer = Completion()
    left = [len(futures)]

    def written(future: asyncio.Future[None]) -> None:
        if future.cancelled() or future.exception() is not None:
            answer.set_exception(CloseConnection(f"produce with acks=0 was not written: {future!r}"))
        left[0] -= 1
        if left[0] == 0:
            answer.set_result(None)

    for future in futures:
        future.add_done_callback(written)
    return answer


def failed(index: int, code: ErrorCode, message: str | None = None, exc: BaseException | None = None) -> Fields:
    """A partition's refusal; the record errors of records a topic refuses (KIP-467) when `exc` has them."""
    record_errors = [{"batch_index": i, "batch_index_error_message": m}
                     for i, m in getattr(exc, "record_errors", ())]
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time": None,
            "log_start_offset": -1, "record_errors": record_errors, "error_message": message}


def respond(version: int, topics: list[tuple[str, list[Fields]]]) -> object:
    return build(API_TABLE[ApiKey.PRODUCE].responses[version], throttle_time=NO_THROTTLE, responses=[
        {"name": name, "partition_responses": parts} for name, parts in topics])


class ProduceHandler:
    def __init__(self, data: DataPlane, access: Access | None = None) -> None:
        self.data = data
        self.access = access or Access()

    def handle(self, ctx: RequestContext, request: ProduceRequest) -> object:
        data = self.data
        version = ctx.api_version
        acks = request.acks
        topic_data = _partitions_once(request.topic_data)
        whole_request_error = None
        txn_id = request.transactional_id
        access = self.access
        if any(_is_transactional(p.records) for _, parts in topic_data for p in parts) and (
                txn_id is None or access.enabled and not access.allows(ctx, Op.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                                       txn_id)):
            whole_request_error = ErrorCode.transactional_id_authorization_failed
        elif acks not in (-1, 0, 1):
            whole_request_error = ErrorCode.invalid_required_acks
        if whole_request_error is not None:
            if acks == 0:
                raise CloseConnection(f"produce with acks=0 failed: {whole_request_error.name}")
            return respond(version, [(name, [failed(p.index, whole_request_error) for p in parts])
                                     for name, parts in topic_data])

        denied: set[str] = set()
        if access.enabled:  # KafkaApis: WRITE on each topic, else TOPIC_AUTHORIZATION_FAILED
            denied = {name for name, _ in topic_data if not access.topic(ctx, Op.WRITE, name)}
        creatable = [name for name, _ in topic_data if name not in denied and data.catalog.get(name) is None
                     and (not access.enabled or access.cluster(ctx, Op.CREATE) or access.topic(ctx, Op.CREATE, name))]
        reserved, _ = data.auto_create_names(creatable)
        if reserved:
            async def after_creation() -> object:
                await data.create_topics(reserved)  # all of them with one catalog write, off the loop
                return await settled(self.append_all(version, topic_data, acks, denied, txn_id))

            return after_creation()
        return self.append_all(version, topic_data, acks, denied, txn_id)

    def append_one(self, name: str, pd: PartitionData, version: int, budget: WalkBudget,
                   txn_id: str | None = None) -> tuple[Fields, asyncio.Future[None] | None]:
        """(the partition's answer, the future of its durability or None); raises what Kafka answers."""
        data = self.data
        part = data.partition(name, pd.index)
        if part is None:
            known = data.catalog.get(name)
            if known is not None and known.internal:
                raise InvalidTopic(f"Cannot append to internal topic {name}")
            if not_hosted_error(data, name, pd.index) is ErrorCode.not_leader_or_follower:
                raise KafkaError(f"This server is not the leader of {name}-{pd.index}.",
                                 ErrorCode.not_leader_or_follower)
            raise UnknownTopicOrPartition(f"This server does not host {name}-{pd.index}.")
        appended = data.append(part, pd.records, version, budget, txn_id)
        entry: Fields = {"index": pd.index, "error_code": ErrorCode.none, "base_offset": appended.base_offset,
                 "log_append_time": _append_time(appended.log_append_time),
                 "log_start_offset": appended.log_start_offset, "record_errors": [],
                 "error_message": None}
        return entry, appended.durable

    def append_all(self, version: int, topic_data: list[tuple[str, list[PartitionData]]], acks: int,
                   denied: frozenset[str] | set[str] = frozenset(), txn_id: str | None = None) -> object:
        topics: list[tuple[str, list[Fields]]] = []
        # acks=-1: answered when these are durable; acks=0: outstanding until they are
        waiting: list[tuple[Fields, asyncio.Future[None]]] = []
        any_error = False
        budget = self.data.walk_budget()  # the request's batches together (message.max.decompressed.bytes)
        for name, listed in topic_data:
            parts: list[Fields] = []
            if name in denied:
                any_error = True
                topics.append((name, [failed(pd.index, ErrorCode.topic_authorization_failed) for pd in listed]))
                continue
            for pd in listed:
                try:
                    entry, durable = self.append_one(name, pd, version, budget, txn_id)
                except (KafkaError, RecordError, StorageError) as exc:
                    any_error = True
                    parts.append(failed(pd.index, error_code_for(exc), str(exc), exc))
                    continue
                parts.append(entry)
                if acks != 1 and durable is not None:
                    waiting.append((entry, durable))
            topics.append((name, parts))

        if acks == 0:
            if any_error:
                raise CloseConnection("produce with acks=0 failed on at least one partition")
            return _silent_until_written([fut for _, fut in waiting if not fut.done()])
        if not waiting:
            return respond(version, topics)

        async def when_durable() -> object:
            results = await asyncio.gather(*(fut for _, fut in waiting), return_exceptions=True)
            for (entry, _), result in zip(waiting, results):
                if isinstance(result, BaseException):
                    entry.update(failed(entry["index"], error_code_for(result), str(result)))
            return respond(version, topics)

        return when_durable()


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.PRODUCE, ProduceHandler(services.data, services.access).handle)
