"""`python -m coordinator dump-log`: every record of a __consumer_offsets log, as text or JSON."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

from storage import consumer_group_records as cg
from storage.batch import Record, build_batch
from storage.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from tests.support.pg_offsets import seed
from tests.support.postgres import free_port
from tests.support.server_process import ROOT

CLASSIC = cg.ClassicMemberMetadata(45000, (cg.ClassicProtocol("range", b"\xff"),))
MEMBER = MemberMetadata(member_id="m-1", group_instance_id="i-1", client_id="c", client_host="/127.0.0.1",
                        rebalance_timeout=300000, session_timeout=45000, subscription=b"\x00\x01",
                        assignment=b"\x02")
RECORDS = [
    (encode_key(OffsetCommitKey("g", "t", 0)), encode_value(OffsetCommitValue(5, "meta", 1000, leader_epoch=2))),
    (encode_key(GroupMetadataKey("g")), encode_value(GroupMetadataValue("consumer", 3, "range", "m-1", (MEMBER,), 77))),
    (encode_key(OffsetCommitKey("g", "t", 1)), encode_value(OffsetCommitValue(9, "", 1000, expire_timestamp=2000))),
    (encode_key(OffsetCommitKey("g", "t", 0)), None),
    (bytes.fromhex("0011000167"), b"\x00\x00"),  # a streams-group record type we do not interpret
    (cg.encode_key(cg.ConsumerGroupMemberMetadataKey("g", "m-2")), cg.encode_value(
        5, cg.ConsumerGroupMemberMetadataValue(None, "rack", "c", "/h", ("a", "b"), None, 30000, "uniform",
                                               CLASSIC))),
    (cg.encode_key(cg.ConsumerGroupTargetAssignmentMemberKey("g", "m-2")), cg.encode_value(
        7, cg.ConsumerGroupTargetAssignmentMemberValue((cg.TopicPartitions(uuid.UUID(int=1), (0, 2)),)))),
    (cg.encode_key(cg.ConsumerGroupMetadataKey("g")), None),
]


def write_segment(directory) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    first = build_batch([Record(i, 1000, k, v) for i, (k, v) in enumerate(RECORDS[:2])], base_offset=0)
    second = build_batch([Record(i, 1000, k, v) for i, (k, v) in enumerate(RECORDS[2:])], base_offset=2)
    path = directory / "00000000000000000000.log"
    path.write_bytes(first + second)
    return str(path)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coordinator", "dump-log", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_json_lines(tmp_path):
    directory = tmp_path / "__consumer_offsets-7"
    write_segment(directory)
    result = run("--json", str(directory))
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0] == {"offset": 0, "type": "offset_commit", "key_version": 1, "group": "g", "topic": "t",
                        "partition": 0, "value": {"version": 3, "offset": 5, "leader_epoch": 2, "metadata": "meta",
                                                  "commit_timestamp": 1000}}
    assert lines[1] == {"offset": 1, "type": "group_metadata", "key_version": 2, "group": "g", "value": {
        "version": 3, "protocol_type": "consumer", "generation": 3, "protocol": "range", "leader": "m-1",
        "current_state_timestamp": 77, "members": [{
            "member_id": "m-1", "group_instance_id": "i-1", "client_id": "c", "client_host": "/127.0.0.1",
            "rebalance_timeout": 300000, "session_timeout": 45000, "subscription": "0001", "assignment": "02"}]}}
    assert lines[2]["value"] == {"version": 1, "offset": 9, "metadata": "", "commit_timestamp": 1000,
                                 "expire_timestamp": 2000}  # v1 has no leader epoch: omitted
    assert lines[3] == {"offset": 3, "type": "offset_commit", "key_version": 1, "group": "g", "topic": "t",
                        "partition": 0, "value": None}
    assert lines[4] == {"offset": 4, "type": "unknown", "key_version": 17}
    assert lines[5] == {"offset": 5, "type": "consumer_group_member_metadata", "key_version": 5, "group": "g",
                        "key": {"groupId": "g", "memberId": "m-2"}, "value": {
                            "version": 0, "instanceId": None, "rackId": "rack", "clientId": "c", "clientHost": "/h",
                            "subscribedTopicNames": ["a", "b"], "subscribedTopicRegex": None,
                            "rebalanceTimeoutMs": 30000, "serverAssignor": "uniform", "classicMemberMetadata": {
                                "sessionTimeoutMs": 45000,
                                "supportedProtocols": [{"name": "range", "metadata": "/w=="}]}}}  # base64
    assert lines[6]["value"] == {"version": 0, "topicPartitions": [
        {"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [0, 2]}]}  # Kafka's Uuid.toString
    assert lines[6]["type"] == "consumer_group_target_assignment_member" and lines[6]["key_version"] == 7
    assert lines[7] == {"offset": 7, "type": "consumer_group_metadata", "key_version": 3, "group": "g",
                        "key": {"groupId": "g"}, "value": None}


def test_text_lines(tmp_path):
    path = write_segment(tmp_path / "p")
    result = run(path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ("offset=0 offset_commit group='g' topic='t' partition=0 :: version=3 offset=5 "
                        "leader_epoch=2 metadata='meta' commit_timestamp=1000")
    assert lines[1].startswith("offset=1 group_metadata group='g' :: version=3 protocol_type='consumer'")
    assert "members=[{member_id='m-1' group_instance_id='i-1'" in lines[1]
    assert lines[3] == "offset=3 offset_commit group='g' topic='t' partition=0 :: tombstone"
    assert lines[4] == "offset=4 unknown key_version=17"
    assert lines[6].startswith("offset=6 consumer_group_target_assignment_member group='g' memberId='m-2' :: "
                               "version=0 topicPartitions=")
    assert lines[7] == "offset=7 consumer_group_metadata group='g' :: tombstone"
    assert len(lines) == 8


def test_corrupt_segment_names_file_and_position(tmp_path):
    path = write_segment(tmp_path / "p")
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0xFF  # inside the second batch: its CRC no longer matches
    open(path, "wb").write(data)
    first_batch_size = len(build_batch([Record(i, 1000, k, v) for i, (k, v) in enumerate(RECORDS[:2])]))
    result = run("--json", path)
    assert result.returncode == 1
    assert f"{path}: bad batch at position {first_batch_size}" in result.stderr
    assert "CRC" in result.stderr
    assert len(result.stdout.splitlines()) == 2  # the records before the bad batch were printed


def test_storage_url_prints_the_same_lines_as_the_segment(tmp_path, pg_url):
    path = write_segment(tmp_path / "__consumer_offsets-7")
    seed(pg_url, {7: open(path, "rb").read()})
    from_file = run("--json", path)
    from_store = run("--json", "--storage-url", pg_url)  # every partition: only 7 has rows
    assert from_store.returncode == 0, from_store.stderr
    assert from_store.stdout == from_file.stdout
    assert len(from_store.stdout.splitlines()) == len(RECORDS)
    assert run("--storage-url", pg_url, "--partition", "3").stdout == ""
    # the multi-host form of storage.url: a host that refuses first, then the server that can write
    host_port, database = pg_url.split("@", 1)[1].split("/", 1)
    several = f"postgresql://postgres@127.0.0.1:{free_port()},{host_port}/{database}?target_session_attrs=read-write"
    assert run("--json", "--storage-url", several).stdout == from_file.stdout
    bad = run("--storage-url", f"postgresql://postgres:s3cret@a,{host_port}/{database}")
    assert bad.returncode == 2 and "target_session_attrs" in bad.stderr and "s3cret" not in bad.stderr


def test_storage_url_corrupt_row_names_the_rows(tmp_path, pg_url):
    path = write_segment(tmp_path / "p")
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0xFF
    seed(pg_url, {2: bytes(data)})
    result = run("--storage-url", pg_url, "--partition", "2")
    assert result.returncode == 1
    assert f"__consumer_offsets-2 rows 0..{len(RECORDS) - 1}: bad batch at position" in result.stderr
    assert "CRC" in result.stderr
    assert len(result.stdout.splitlines()) == 2


def test_paths_or_storage_url(tmp_path, pg_url):
    assert run().returncode == 2
    assert run(write_segment(tmp_path / "p"), "--storage-url", pg_url).returncode == 2


def test_transaction_log_and_markers(tmp_path):
    from storage.control_records import build_marker_batch
    from storage.txn_log_records import TxnLogKey, TxnLogValue, encode_txn_key, encode_txn_value

    record = (encode_txn_key(TxnLogKey("tx")), encode_txn_value(TxnLogValue(7, 0, 60000, 0, None, 5, -1)))
    path = tmp_path / "segment.log"  # not in a __transaction_state-N directory: the flag says what it is
    path.write_bytes(build_batch([Record(0, 5, *record)]) + build_marker_batch(7, 0, True, 0, 6))
    result = run("--transaction-log-decoder", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "offset=0 transaction_metadata transactionalId='tx' :: version=1 producerId=7 producerEpoch=0 "
        "transactionTimeoutMs=60000 transactionStatus=0 state=Empty transactionPartitions=null "
        "transactionLastUpdateTimestampMs=5 transactionStartTimestampMs=-1",
        "offset=0 COMMIT marker producerId=7 producerEpoch=0 coordinatorEpoch=0",  # base offsets as written
    ]
    in_directory = tmp_path / "__transaction_state-0"
    in_directory.mkdir()
    (in_directory / "00000000000000000000.log").write_bytes(path.read_bytes())
    assert run("--json", str(in_directory)).stdout.splitlines()[0].startswith(
        '{"offset": 0, "type": "transaction_metadata", "key": {"version": 0, "data": {"transactionalId": "tx"}}')


def test_share_group_records_and_the_share_state_log(tmp_path):
    from storage import share_group_records as sg, share_state_records as ss

    topic = uuid.UUID(int=1)
    offsets = [sg.encode(sg.ShareGroupMemberMetadataKey("sg", "m"), sg.ShareGroupMemberMetadataValue(None, "c", "/h",
                                                                                                    ("t",))),
               sg.encode(sg.ShareGroupMetadataKey("sg"), None)]
    directory = tmp_path / "__consumer_offsets-0"
    directory.mkdir()
    (directory / "00000000000000000000.log").write_bytes(build_batch([Record(i, 5, *r) for i, r in enumerate(offsets)]))
    lines = [json.loads(line) for line in run("--json", str(directory)).stdout.splitlines()]
    assert lines == [
        {"offset": 0, "type": "share_group_member_metadata", "key_version": 10, "group": "sg",
         "key": {"groupId": "sg", "memberId": "m"},
         "value": {"version": 0, "rackId": None, "clientId": "c", "clientHost": "/h", "subscribedTopicNames": ["t"]}},
        {"offset": 1, "type": "share_group_metadata", "key_version": 11, "group": "sg", "key": {"groupId": "sg"},
         "value": None}]

    state = [ss.encode(ss.ShareSnapshotKey("sg", topic, 0), ss.ShareSnapshotValue(
                 0, 1, 2, 10, 100, 100, (ss.StateBatch(10, 12, 2, 1),), 3)),
             ss.encode(ss.ShareUpdateKey("sg", topic, 0), ss.ShareUpdateValue(0, 2, -1, ()))]
    path = tmp_path / "segment.log"
    path.write_bytes(build_batch([Record(i, 5, *r) for i, r in enumerate(state)]))
    result = run("--share-group-state-decoder", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "offset=0 share_snapshot group='sg' topicId='AAAAAAAAAAAAAAAAAAAAAQ' partition=0 :: version=0 snapshotEpoch=0 "
        "stateEpoch=1 leaderEpoch=2 startOffset=10 createTimestamp=100 writeTimestamp=100 stateBatches=[{'firstOffset':"
        " 10, 'lastOffset': 12, 'deliveryState': 2, 'deliveryCount': 1}] deliveryCompleteCount=3",
        "offset=1 share_update group='sg' topicId='AAAAAAAAAAAAAAAAAAAAAQ' partition=0 :: version=0 snapshotEpoch=0 "
        "leaderEpoch=2 startOffset=-1 stateBatches=[]"]
    in_directory = tmp_path / "__share_group_state-3"
    in_directory.mkdir()
    (in_directory / "00000000000000000000.log").write_bytes(path.read_bytes())
    first = json.loads(run("--json", str(in_directory)).stdout.splitlines()[0])
    assert first["key"] == {"groupId": "sg", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 0}
    assert first["value"]["stateBatches"] == [{"firstOffset": 10, "lastOffset": 12, "deliveryState": 2,
                                               "deliveryCount": 1}]
