"""ShareFetch v1-v2 (KIP-932): kio messages <-> the share session cache and coordinator/share/runtime/
share_fetching.py, as Kafka's KafkaApis.handleShareFetchRequest and SharePartitionManager.newContext answer:

* READ on the group, else GROUP_AUTHORIZATION_FAILED for the whole request; an empty group or member id is
  INVALID_REQUEST;
* the share session (coordinator/share/sessions.py): epoch 0 opens one (acknowledgements in it:
  INVALID_REQUEST), -1 closes it after its acknowledgements (nothing is fetched; what the member holds in the
  session's partitions goes back), any other must be the session's: SHARE_SESSION_NOT_FOUND,
  INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED answer the whole request;
* a partition listed twice is one partition (Kafka keys the request's partitions by topic id and index), its
  acknowledgement batches those of its listings in order;
* per partition: READ on its topic (TOPIC_AUTHORIZATION_FAILED), UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION;
  acknowledgements answered in AcknowledgeErrorCode once durable; records and AcquiredRecords of the session's
  partitions, waiting up to MaxWaitMs when there are none;
* AcquisitionLockTimeoutMs: the group's share.record.lock.duration.ms;
* a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH (cluster mode: another node leads it) names
  its current leader (CurrentLeader) and that node's endpoint on the client's listener (NodeEndpoints), as
  KafkaApis.processShareFetchResponse / processShareAcknowledgeResponse do.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from coordinator.errors import error_message
from coordinator.handlers.wire_values import NO_THROTTLE, ms
from coordinator.net.dispatch import Abandonable, Dispatcher, RequestContext
from coordinator.security.access import Access, Op
from coordinator.services import Services
from coordinator.share.record_states import AckBatch, AcquireMode
from coordinator.share.runtime.share_fetching import FetchedPartition, FetchLimits, ShareFetching
from coordinator.share.runtime.share_partitions import SharePartitions
from coordinator.share.sessions import FINAL_EPOCH, INITIAL_EPOCH
from protocol.apis import API_TABLE, ApiKey
from protocol.build import Fields, build

log = structlog.get_logger(__name__)

PartitionKey = tuple[uuid.UUID, int]
NO_LEADER = {"leader_id": -1, "leader_epoch": -1}
MOVED = (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch)


def lock_timeout(value_ms: int) -> Any:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value_ms))


def request_acks(topics: Any) -> dict[PartitionKey, list[AckBatch]]:
    """The request's partitions in order, each with its acknowledgement batches (a partition listed twice once)."""
    out: dict[PartitionKey, list[AckBatch]] = {}
    for topic in topics:
        for part in topic.partitions:
            batches = out.setdefault((topic.topic_id, part.partition_index), [])
            batches.extend(AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                           for b in part.acknowledgement_batches)
    return out


def grouped(answers: dict[PartitionKey, Fields]) -> list[Fields]:
    """Partition answers under their topics, in the order they came."""
    topics: dict[uuid.UUID, list[Fields]] = {}
    for (topic_id, _index), answer in answers.items():
        topics.setdefault(topic_id, []).append(answer)
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()]


class ShareRequests:
    """What ShareFetch and ShareAcknowledge share: access checks, acknowledgements, releasing a closed session."""

    def __init__(self, partitions: SharePartitions, fetching: ShareFetching, access: Access, data: Any,
                 view: Any = None) -> None:
        self.partitions = partitions
        self.fetching = fetching
        self.access = access
        self.data = data
        self.view = view  # the ClusterView: who leads a partition

    def leader_hints(self, ctx: RequestContext, answers: dict[PartitionKey, Fields]) -> list[Fields]:
        """Kafka's hints for the partitions answered NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH: their
        CurrentLeader set in `answers`, and the NodeEndpoints of those leaders (on the client's listener)."""
        endpoints: dict[int, Fields] = {}
        for (topic_id, index), answer in answers.items():
            info = self.data.catalog.by_id(topic_id)
            if answer["error_code"] not in MOVED or info is None or self.view is None:
                continue
            leader = self.view.leader(info.name, index)
            broker = self.view.broker(leader)
            broker = None if broker is None else broker.on(ctx.listener)
            if broker is None:
                continue
            answer["current_leader"] = {"leader_id": leader, "leader_epoch": self.view.leader_epoch(info.name, index)}
            endpoints[leader] = {"node_id": leader, "host": broker.host, "port": broker.port, "rack": broker.rack}
        return list(endpoints.values())

    def topic_refused(self, ctx: RequestContext, topic_id: uuid.UUID) -> bool:
        if not self.access.enabled:
            return False
        info = self.data.catalog.by_id(topic_id)
        return info is not None and not self.access.topic(ctx, Op.READ, info.name)

    async def acknowledge_all(self, ctx: RequestContext, group_id: str, member_id: str,
                              acks: dict[PartitionKey, list[AckBatch]], renew_allowed: bool
                              ) -> dict[PartitionKey, tuple[ErrorCode, str | None]]:
        results: dict[PartitionKey, tuple[ErrorCode, str | None]] = {}
        for key, batches in acks.items():
            if not batches:
                continue
            if self.topic_refused(ctx, key[0]):
                results[key] = (ErrorCode.topic_authorization_failed, None)
                continue
            results[key] = await self.fetching.acknowledge(group_id, member_id, key[0], key[1], batches,
                                                           renew_allowed)
        return results

    def close_session(self, group_id: str, member_id: str) -> None:
        """A session closed by its member (epoch -1): what it held in the session's partitions goes back."""
        session = self.partitions.sessions.close(group_id, member_id)
        if session is not None:
            self.partitions.release(group_id, member_id, session.partitions)


def share_requests(services: Services) -> ShareRequests:
    return ShareRequests(services.share.partitions, services.share.fetching, services.access, services.data,
                         services.view)


class _Parked:
    """The DelayedFetch a waiting ShareFetch is parked on, released if its connection closes."""

    __slots__ = ("delayed",)

    def __init__(self) -> None:
        self.delayed: Any = None

    def release(self) -> None:
        if self.delayed is not None:
            self.delayed.release()


class ShareFetchHandler:
    def __init__(self, requests: ShareRequests) -> None:
        self.requests = requests

    def error(self, version: int, code: ErrorCode, message: str | None = None) -> Any:
        return build(API_TABLE[ApiKey.SHARE_FETCH].responses[version], throttle_time=NO_THROTTLE, error_code=code,
                     error_message=message if message is not None else error_message(code),
                     acquisition_lock_timeout=lock_timeout(0), responses=[], node_endpoints=[])

    def handle(self, ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        requests = self.requests
        if requests.access.enabled and not requests.access.group(ctx, Op.READ, request.group_id or ""):
            return self.error(version, ErrorCode.group_authorization_failed)
        if not request.group_id or not request.member_id:
            return self.error(version, ErrorCode.invalid_request, "GroupId and MemberId must be set.")
        acks = request_acks(request.topics)
        epoch = request.share_session_epoch
        if epoch == INITIAL_EPOCH and any(acks.values()):
            return self.error(version, ErrorCode.invalid_request,
                              "Acknowledge data present in the initial share fetch request.")
        forgotten = [(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions]
        answer = requests.partitions.sessions.request(request.group_id, request.member_id, epoch,
                                                      f"{ctx.client_host}:{ctx.client_port}", acks, forgotten)
        if answer.error is not ErrorCode.none:
            return self.error(version, answer.error)
        parked = _Parked()
        return Abandonable(self.serve(ctx, request, acks, parked), parked.release)

    async def serve(self, ctx: RequestContext, request: Any, acks: dict[PartitionKey, list[AckBatch]],
                    parked: _Parked) -> Any:
        version = ctx.api_version
        requests = self.requests
        group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
        renew = bool(getattr(request, "is_renew_ack", False))
        acked = await requests.acknowledge_all(ctx, group_id, member_id, acks, renew)
        fetched: dict[PartitionKey, FetchedPartition] = {}
        if epoch == FINAL_EPOCH:
            requests.close_session(group_id, member_id)
        else:
            session = requests.partitions.sessions.sessions.get((group_id, member_id))
            keys = sorted(session.partitions, key=lambda k: (k[0].bytes, k[1])) if session is not None else []
            refused = [key for key in keys if requests.topic_refused(ctx, key[0])]
            for key in refused:
                fetched[key] = FetchedPartition(ErrorCode.topic_authorization_failed)
            settings = requests.partitions.settings_for(group_id)
            mode = AcquireMode(getattr(request, "share_acquire_mode", 0) or 0) \
                if getattr(request, "share_acquire_mode", 0) in (0, 1) else AcquireMode.BATCH_OPTIMIZED
            limits = FetchLimits(request.max_records, max(1, request.batch_size),
                                 min(request.max_bytes, requests.data.settings.fetch_max_bytes), mode)
            fetched.update(await requests.fetching.fetch(
                group_id, member_id, [k for k in keys if k not in refused], limits,
                settings.isolation_level == "read_committed", ms(request.max_wait) / 1000, parked))
        answers: dict[PartitionKey, Fields] = {}
        for key in [*acks, *fetched]:
            if key in answers or (key not in fetched and key not in acked):
                continue
            part = fetched.get(key, FetchedPartition())
            ack_code, ack_message = acked.get(key, (ErrorCode.none, None))
            answers[key] = {
                "partition_index": key[1], "error_code": part.error, "error_message": part.message,
                "acknowledge_error_code": ack_code, "acknowledge_error_message": ack_message,
                "current_leader": NO_LEADER, "records": part.records,
                "acquired_records": [{"first_offset": a.first_offset, "last_offset": a.last_offset,
                                      "delivery_count": a.delivery_count} for a in part.acquired]}
        lock_ms = requests.partitions.settings_for(group_id).record_lock_duration_ms
        endpoints = requests.leader_hints(ctx, answers)
        return build(API_TABLE[ApiKey.SHARE_FETCH].responses[version], throttle_time=NO_THROTTLE,
                     error_code=ErrorCode.none, error_message=None, acquisition_lock_timeout=lock_timeout(lock_ms),
                     responses=grouped(answers), node_endpoints=endpoints)


def register(dispatcher: Dispatcher, services: Services) -> None:
    dispatcher.register(ApiKey.SHARE_FETCH, ShareFetchHandler(share_requests(services)).handle)
