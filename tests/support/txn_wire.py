"""Wire helpers for the transaction tests: the transactional APIs, transactional produce and fetch by
isolation level, over tests/support/wire_client.WireClient (kio messages)."""

from __future__ import annotations

import datetime
import time
from typing import Any

from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.list_transactions.v1.request import ListTransactionsRequest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from storage.batch import build_batch, iter_batches

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def init_producer_id(client: Any, txn_id: str, timeout_ms: int = 60_000, producer_id: int = -1,
                     producer_epoch: int = -1) -> Any:
    return client.call(InitProducerIdRequest(
        transactional_id=txn_id, transaction_timeout=datetime.timedelta(milliseconds=timeout_ms),
        producer_id=producer_id, producer_epoch=producer_epoch))


def add_partitions(client: Any, txn_id: str, pid: int, epoch: int, topic: str, partitions: list[int]) -> dict:
    answer = client.call(AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=(AddPartitionsToTxnTopic(name=topic, partitions=tuple(partitions)),)))
    return {(t.name, p.partition_index): p.partition_error_code
            for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition}


def add_offsets(client: Any, txn_id: str, pid: int, epoch: int, group: str) -> Any:
    return client.call(AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                              group_id=group)).error_code


def end_txn(client: Any, txn_id: str, pid: int, epoch: int, commit: bool) -> Any:
    return client.call(EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                     committed=commit)).error_code


def produce(client: Any, topic: str, partition: int, values: list[bytes], *, txn_id: str | None, pid: int,
            epoch: int, sequence: int) -> Any:
    batch = build_batch([(None, v, int(time.time() * 1000)) for v in values], producer_id=pid,
                        producer_epoch=epoch, base_sequence=sequence, is_transactional=txn_id is not None)
    answer = client.call(ProduceRequest(transactional_id=txn_id, acks=-1, timeout=datetime.timedelta(seconds=10),
                                        topic_data=(TopicProduceData(name=topic, partition_data=(
                                            PartitionProduceData(index=partition, records=batch),)),)))
    return answer.responses[0].partition_responses[0]


def fetch(client: Any, topic: str, partition: int, offset: int, isolation: int) -> Any:
    request = FetchRequest(replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20,
                           isolation_level=isolation, session_id=0, session_epoch=-1, forgotten_topics_data=(),
                           rack_id="", topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
                               partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                               last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20),)),))
    return client.call(request).responses[0].partitions[0]


def batches(records: bytes | None) -> list:
    return list(iter_batches(records or b""))


def find_txn_coordinator(client: Any, txn_id: str) -> Any:
    return client.call(FindCoordinatorRequest(key_type=1, coordinator_keys=(txn_id,))).coordinators[0]


def describe(client: Any, *txn_ids: str) -> list:
    return list(client.call(DescribeTransactionsRequest(transactional_ids=txn_ids)).transaction_states)


def list_transactions(client: Any, states: tuple[str, ...] = (), producer_ids: tuple[int, ...] = (),
                      duration_ms: int = -1) -> Any:
    return client.call(ListTransactionsRequest(state_filters=states, producer_id_filters=producer_ids,
                                               duration_filter=duration_ms))
