"""Appends to a topic partition: a producer's batch (Produce) and a transaction marker (from the
transaction coordinator), with the producer-state rules of Kafka's UnifiedLog.appendAsLeader.

A producer batch (`append_batch`): validated on its bytes (validation.py), then, for a producer id,
a retried duplicate is answered with its first offsets; a transactional batch that would begin a
transaction here is verified with the plane's `txn_verifier` (KIP-890 part 1: the coordinator must
know the partition is in the transaction; its error refuses the batch); then epoch, sequence and
transactional-flag rules (producer_state.py). A marker (`write_marker`): Kafka's epoch and
coordinator epoch checks, the control batch appended, the producer's transaction ended.

Each append tells the fetch purgatory, once durable, the bytes it made readable: all of them to
read_uncommitted fetches, and to read_committed ones the bytes the last stable offset moved past.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from kio.schema.errors import ErrorCode

from coordinator.data_plane.ownership import not_hosted_error
from coordinator.data_plane.partition import Partition
from coordinator.data_plane.purgatory import FetchPurgatory
from coordinator.data_plane.validation import WalkBudget, check_batch, stamp_log_append_time
from coordinator.errors import KafkaError
from storage.control_records import build_marker_batch
from storage.errors import StorageError
from storage.log_protocol import PartitionLogProtocol

# (transactional_id, producer_id, producer_epoch, topic, partition) -> the error refusing the batch, or None
TxnVerifier = Callable[[str, int, int, str, int], "ErrorCode | None"]


class DataPlane(Protocol):
    """What of data_plane.plane.DataPlane this module uses (and ownership.not_hosted_error)."""

    settings: Any
    txn_verifier: TxnVerifier | None
    purgatory: FetchPurgatory
    take_all: bool
    catalog: Any
    partitions: dict[tuple[str, int], Partition]
    base_configs: dict[str, str]

    def partition(self, topic: str, index: int) -> Partition | None: ...


class Appended(NamedTuple):
    """What Produce answers for one partition; `durable` is awaited for acks=-1 (None: already)."""

    base_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    durable: asyncio.Future[None] | None


def _tell_purgatory(purgatory: FetchPurgatory, part: Partition, size: int, durable: asyncio.Future) -> None:
    """Once durable: `size` bytes readable to read_uncommitted fetches, and what the LSO gained to the others."""
    txns, key = part.producers.txns, part.key

    def readable(future: asyncio.Future) -> None:
        if not future.cancelled():
            if future.exception() is None:  # retrieved either way: acks=1 appends have nobody awaiting them
                txns.made_durable(size)
        purgatory.on_append(key, size, part.stable_bytes_gained())

    durable.add_done_callback(readable)


async def _durable_through(log_: PartitionLogProtocol, last_offset: int) -> None:
    """Until the duplicated batch is durable; StorageError if its write failed (the log's high watermark
    never passed it): a retry of a batch whose write failed is never acknowledged for it."""
    await log_.flush()
    if log_.high_watermark <= last_offset:
        raise StorageError(f"the write of the batch ending at offset {last_offset} failed; retry it")


def append_batch(plane: DataPlane, part: Partition, data: bytes | None, produce_version: int,
                 budget: WalkBudget | None = None, transactional_id: str | None = None) -> Appended:
    """See DataPlane.append."""
    config = part.config
    info = check_batch(data, produce_version=produce_version, max_message_bytes=config.max_message_bytes,
                       segment_bytes=config.segment_bytes,
                       max_decompressed_bytes=plane.settings.max_decompressed_bytes, budget=budget,
                       rules=config.rules, create_time=not config.log_append_time,
                       topic_partition=f"{part.topic}-{part.index}")
    log_ = part.log
    pid = info.producer_id
    producers = part.producers
    transactional = info.is_transactional
    if pid >= 0:
        last_seq = info.last_sequence
        duplicate = producers.duplicate(pid, info.producer_epoch, info.base_sequence, last_seq)
        if duplicate is not None:
            durable = (None if log_.high_watermark > duplicate.last_offset
                       else asyncio.ensure_future(_durable_through(log_, duplicate.last_offset)))
            return Appended(duplicate.first_offset, -1, log_.log_start_offset, durable)
        verifier = plane.txn_verifier
        if transactional and verifier is not None and not producers.has_ongoing(pid):
            code = verifier(transactional_id or "", pid, info.producer_epoch, part.topic, part.index)
            if code is not None and code != ErrorCode.none:
                raise KafkaError("Record was not part of an ongoing transaction", code)
        producers.validate(pid, info.producer_epoch, info.base_sequence, last_seq, transactional)
    append_time = -1
    assert data is not None  # check_batch refuses a null batch
    payload: bytes | bytearray = data
    if config.log_append_time:
        append_time = int(time.time() * 1000)
        payload = bytearray(data)
        stamp_log_append_time(payload, append_time)
    result = log_.append(payload, partition_leader_epoch=part.leader_epoch)
    if pid >= 0:
        producers.record(pid, info.producer_epoch, info.base_sequence, last_seq, result.base_offset,
                         result.last_offset, append_time if append_time >= 0 else info.max_timestamp,
                         transactional)
    producers.txns.appended(info.size)
    _tell_purgatory(plane.purgatory, part, info.size, result.durable)
    return Appended(result.base_offset, append_time, log_.log_start_offset, result.durable)


async def write_marker(plane: DataPlane, topic: str, partition: int, producer_id: int, producer_epoch: int,
                       commit: bool, coordinator_epoch: int) -> None:
    """See DataPlane.write_marker."""
    part = plane.partition(topic, partition)
    if part is None:
        code = not_hosted_error(plane, topic, partition)
        raise KafkaError(f"This server does not host {topic}-{partition}.", code)
    producers = part.producers
    producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
    now = int(time.time() * 1000)
    data = build_marker_batch(producer_id, producer_epoch, commit, coordinator_epoch, now)
    result = part.log.append(data, partition_leader_epoch=part.leader_epoch)
    producers.apply_marker(producer_id, producer_epoch, commit, coordinator_epoch, result.base_offset, now)
    producers.txns.appended(len(data))
    producers.txns.trim(part.log.log_start_offset)
    _tell_purgatory(plane.purgatory, part, len(data), result.durable)
    await result.durable
