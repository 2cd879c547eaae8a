"""Transactional batches on the real server, over the wire: read_committed Fetch stops at the last stable
offset (the open transaction's first offset), read_uncommitted sees everything, ListOffsets isolation 1
answers the LSO, and after kill -9 and a restart the rebuilt producer state holds the LSO where it was."""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from protocol.apis import API_TABLE, ApiKey
from protocol.build import build
from storage.batch import build_batch, iter_batches
from tests.support.wire_client import WireClient

MS0 = datetime.timedelta(0)


def req(api: ApiKey, version: int, **values):
    return build(API_TABLE[int(api)].requests[version], **values)


def produce(client: WireClient, records: bytes, transactional_id: str | None = None):
    response = client.call(req(ApiKey.PRODUCE, 9, acks=-1, timeout=datetime.timedelta(seconds=5),
                               transactional_id=transactional_id,
                               topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": records}]}]))
    return response.responses[0].partition_responses[0]


def fetch(client: WireClient, isolation: int):
    response = client.call(req(ApiKey.FETCH, 12, max_wait=MS0, min_bytes=1, max_bytes=1 << 20,
                               isolation_level=isolation, session_id=0, session_epoch=-1, forgotten_topics_data=[],
                               rack_id="", topics=[{"topic": "t", "partitions": [
                                   {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]))
    return response.responses[0].partitions[0]


def latest(client: WireClient, isolation: int) -> int:
    response = client.call(req(ApiKey.LIST_OFFSETS, 9, replica_id=-1, isolation_level=isolation, topics=[
        {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]))
    return response.topics[0].partitions[0].offset


def txn_start(client: WireClient, producer_id: int) -> int:
    response = client.call(req(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[{"name": "t", "partition_indexes": [0]}]))
    return {p.producer_id: p.current_txn_start_offset
            for p in response.topics[0].partitions[0].active_producers}[producer_id]


def offsets(records: bytes | None) -> list[int]:
    return [b.base_offset for b in iter_batches(records or b"")]


def check_open_transaction(client: WireClient, producer_id: int) -> None:
    committed, uncommitted = fetch(client, 1), fetch(client, 0)
    assert (committed.high_watermark, committed.last_stable_offset) == (4, 1)
    assert offsets(committed.records) == [0] and committed.aborted_transactions == ()
    assert (uncommitted.last_stable_offset, offsets(uncommitted.records)) == (1, [0, 1, 3])
    assert (latest(client, 1), latest(client, 0)) == (1, 4)
    assert txn_start(client, producer_id) == 1


def test_read_committed_stops_at_an_open_transaction_also_after_kill_and_restart(server_factory, tmp_path):
    data = str(tmp_path / "txn")
    server = server_factory(log_dir=data, topics={"t": 1})
    with WireClient(server.host, server.port) as client:
        init = client.call(req(ApiKey.INIT_PRODUCER_ID, 4, transactional_id="tx",
                               transaction_timeout=datetime.timedelta(seconds=60), producer_id=-1, producer_epoch=-1))
        assert (init.error_code, init.producer_epoch) == (ErrorCode.none, 0)
        pid = init.producer_id
        added = client.call(req(ApiKey.ADD_PARTITIONS_TO_TXN, 3, v3_and_below_transactional_id="tx",
                                v3_and_below_producer_id=pid, v3_and_below_producer_epoch=0,
                                v3_and_below_topics=[{"name": "t", "partitions": [0]}]))
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == ErrorCode.none
        assert produce(client, build_batch([(None, b"plain", 1)])).base_offset == 0

        def txn(seq: int, *values: bytes) -> bytes:
            return build_batch([(None, v, 10 + i) for i, v in enumerate(values)], producer_id=pid,
                               producer_epoch=0, base_sequence=seq, is_transactional=True)

        no_id = produce(client, txn(0, b"a", b"b"))
        assert no_id.error_code == ErrorCode.transactional_id_authorization_failed
        first = produce(client, txn(0, b"a", b"b"), transactional_id="tx")
        assert (first.error_code, first.base_offset) == (ErrorCode.none, 1)
        assert produce(client, txn(2, b"c"), transactional_id="tx").base_offset == 3
        mid = produce(client, build_batch([(None, b"x", 1)], producer_id=pid, producer_epoch=0, base_sequence=3))
        assert mid.error_code == ErrorCode.invalid_txn_state  # not transactional while a transaction is open
        check_open_transaction(client, pid)
    server.kill()  # kill -9: the producer state is rebuilt from the log
    restarted = server_factory(log_dir=data)
    with WireClient(restarted.host, restarted.port) as client:
        check_open_transaction(client, pid)
    assert restarted.stop() == 0
