"""dump-log of transactions: a __transaction_state partition written with storage.log (records, a tombstone),
and transaction markers in any partition's dump (__transaction_state, __consumer_offsets, a topic's log)."""

from __future__ import annotations

import io
import json

from storage.batch import build_batch
from storage.control_records import build_marker_batch
from storage.dump import dump, is_transaction_log
from storage.log import PartitionLog
from storage.records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from storage.txn_log_records import TxnLogKey, TxnLogValue, TxnPartitions, encode_txn_key, encode_txn_value

ONGOING = TxnLogValue(4000, 3, 60000, 1, (TxnPartitions("orders", (0, 2)),), 1700000000500, 1700000000000)
EMPTY_V0 = TxnLogValue(4001, 0, 30000, 0, None, 1700000000001, -1)
FENCED = TxnLogValue(4000, 4, 60000, 7, (TxnPartitions("orders", (0, 2)),), 1700000000600, 1700000000000,
                     previous_producer_id=3999, client_transaction_version=2, extra={9: b"\x01"})


async def write_log(path: str, batches: list[bytes]) -> None:
    log = PartitionLog.open(path)
    try:
        for data in batches:
            await log.append(data)
    finally:
        await log.close()


def run_dump(path: str, as_json: bool, transaction_log: bool = False) -> list:
    out = io.StringIO()
    count = dump([path], as_json, out, transaction_log)
    lines = out.getvalue().splitlines()
    assert count == len(lines)
    return [json.loads(line) for line in lines] if as_json else lines


def txn_batches() -> list[bytes]:
    key, other = encode_txn_key(TxnLogKey("my-txn")), encode_txn_key(TxnLogKey("idle"))
    return [
        build_batch([(key, encode_txn_value(ONGOING), 10), (other, encode_txn_value(EMPTY_V0, 0), 10)]),
        build_marker_batch(77, 1, True, 5, 11),
        build_batch([(key, encode_txn_value(FENCED), 12), (other, None, 12)]),
        build_batch([(b"\x00\x05" + b"\x00\x01x", b"\x00\x09", 13), (None, encode_txn_value(ONGOING, 0), 13)]),
    ]


async def test_transaction_state_partition_as_json(tmp_path):
    path = str(tmp_path / "__transaction_state-3")
    await write_log(path, txn_batches())
    assert is_transaction_log(path) and is_transaction_log(path + "/00000000000000000000.log")
    lines = run_dump(path, as_json=True)
    assert len(lines) == 7
    assert lines[0] == {"offset": 0, "type": "transaction_metadata",
                        "key": {"version": 0, "data": {"transactionalId": "my-txn"}},
                        "value": {"version": 1, "state": "Ongoing", "data": {
                            "producerId": 4000, "producerEpoch": 3, "transactionTimeoutMs": 60000,
                            "transactionStatus": 1, "transactionPartitions": [{"topic": "orders",
                                                                                "partitionIds": [0, 2]}],
                            "transactionLastUpdateTimestampMs": 1700000000500,
                            "transactionStartTimestampMs": 1700000000000}}}
    assert lines[1]["value"] == {"version": 0, "state": "Empty", "data": {
        "producerId": 4001, "producerEpoch": 0, "transactionTimeoutMs": 30000, "transactionStatus": 0,
        "transactionPartitions": None, "transactionLastUpdateTimestampMs": 1700000000001,
        "transactionStartTimestampMs": -1}}
    assert lines[2] == {"offset": 2, "type": "end_txn_marker", "controlType": "COMMIT", "producerId": 77,
                        "producerEpoch": 1, "coordinatorEpoch": 5}
    fenced = lines[3]["value"]
    assert fenced["state"] == "PrepareEpochFence"
    assert list(fenced["data"])[:3] == ["producerId", "previousProducerId", "producerEpoch"]  # Kafka's order
    assert fenced["data"]["previousProducerId"] == 3999 and fenced["data"]["clientTransactionVersion"] == 2
    assert "nextProducerId" not in fenced["data"]  # a tagged field at its default is not printed
    assert fenced["data"]["unknownTaggedFields"] == {"9": "01"}
    assert lines[4] == {"offset": 4, "type": "transaction_metadata",
                        "key": {"version": 0, "data": {"transactionalId": "idle"}}, "value": None}  # tombstone
    assert lines[5] == {"offset": 5, "type": "unknown", "key": {"version": 5, "data": "unknown"},
                        "value": {"version": 9, "data": "unknown"}}
    assert lines[6]["key"] is None and lines[6]["value"]["state"] == "Ongoing"


async def test_transaction_state_partition_as_text(tmp_path):
    path = str(tmp_path / "__transaction_state-3")
    await write_log(path, txn_batches())
    lines = run_dump(path, as_json=False)
    assert lines[0] == ("offset=0 transaction_metadata transactionalId='my-txn' :: version=1 producerId=4000 "
                        "producerEpoch=3 transactionTimeoutMs=60000 transactionStatus=1 state=Ongoing "
                        "transactionPartitions=[orders-0,orders-2] transactionLastUpdateTimestampMs=1700000000500 "
                        "transactionStartTimestampMs=1700000000000")
    assert lines[1] == ("offset=1 transaction_metadata transactionalId='idle' :: version=0 producerId=4001 "
                        "producerEpoch=0 transactionTimeoutMs=30000 transactionStatus=0 state=Empty "
                        "transactionPartitions=null transactionLastUpdateTimestampMs=1700000000001 "
                        "transactionStartTimestampMs=-1")
    assert lines[2] == "offset=2 COMMIT marker producerId=77 producerEpoch=1 coordinatorEpoch=5"
    assert "state=PrepareEpochFence" in lines[3] and "previousProducerId=3999" in lines[3]
    assert lines[4] == "offset=4 transaction_metadata transactionalId='idle' :: tombstone"
    assert lines[5] == "offset=5 unknown key_version=5 :: value_version=9 unknown"
    assert lines[6].startswith("offset=6 unknown key=null :: version=0 producerId=4000")


async def test_the_flag_decodes_any_path_as_a_transaction_log(tmp_path):
    path = str(tmp_path / "copied")
    await write_log(path, txn_batches()[:1])
    assert not is_transaction_log(path)
    assert run_dump(path, as_json=True)[0]["type"] == "unknown"  # read as offsets records: not one
    assert run_dump(path, as_json=True, transaction_log=True)[0]["key"]["data"] == {"transactionalId": "my-txn"}


async def test_markers_in_the_offsets_log_and_a_topic_log(tmp_path):
    offsets = str(tmp_path / "__consumer_offsets-7")
    commit = build_batch([(encode_key(OffsetCommitKey("g", "orders", 0)), encode_value(OffsetCommitValue(5, "", 9)),
                           9)], producer_id=77, producer_epoch=1, is_transactional=True)
    await write_log(offsets, [commit, build_marker_batch(77, 1, False, 0, 10)])
    lines = run_dump(offsets, as_json=True)
    assert lines[0]["type"] == "offset_commit" and lines[0]["value"]["offset"] == 5
    assert lines[1] == {"offset": 1, "type": "end_txn_marker", "controlType": "ABORT", "producerId": 77,
                        "producerEpoch": 1, "coordinatorEpoch": 0}
    assert run_dump(offsets, as_json=False)[1] == (
        "offset=1 ABORT marker producerId=77 producerEpoch=1 coordinatorEpoch=0")

    topic = str(tmp_path / "orders-0")
    leader_change = build_batch([(b"\x00\x00\x00\x02", b"\x00\x00", 3)], producer_id=-1, is_control=True)
    await write_log(topic, [build_batch([(b"k", b"v", 1)], producer_id=77, producer_epoch=1, is_transactional=True),
                            build_marker_batch(77, 1, True, 2, 2), leader_change])
    text = run_dump(topic, as_json=False)
    assert text[0] == "offset=0 unknown error='record key is shorter than its version'"  # not an offsets record
    assert text[1] == "offset=1 COMMIT marker producerId=77 producerEpoch=1 coordinatorEpoch=2"
    assert text[2] == "offset=2 LEADER_CHANGE control record producerId=-1 producerEpoch=-1"
    assert run_dump(topic, as_json=True)[2] == {"offset": 2, "type": "control", "controlType": "LEADER_CHANGE",
                                                "producerId": -1, "producerEpoch": -1}
