"""Transaction markers (storage/control_records.py): the exact bytes of Kafka's control batch, round trips,
and what read_marker refuses. The reference hex was printed by kafka-clients 3.9.1's
MemoryRecords.withEndTransactionMarker (the bytes a Kafka broker appends for WriteTxnMarkers)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, strategies as st

from storage.batch import HEADER, RecordBatch, build_batch, ensure_valid
from storage.control_records import ABORT, COMMIT, ControlMarker, build_marker_batch, control_type, read_marker
from storage.errors import CorruptRecordError

# withEndTransactionMarker(0, 1700000000123, -1, producerId 4242, epoch 7, COMMIT, coordinatorEpoch 3)
KAFKA_COMMIT = bytes.fromhex(
    "0000000000000000" "00000042" "ffffffff" "02" "e84a0204" "0030" "00000000"
    "0000018bcfe5687b" "0000018bcfe5687b" "0000000000001092" "0007" "ffffffff" "00000001"
    "20" "00" "00" "00" "08" "00000001" "0c" "000000000003" "00")
# withEndTransactionMarker(0, 5, partitionLeaderEpoch 2, producerId 1, epoch 0, ABORT, coordinatorEpoch 0)
KAFKA_ABORT = bytes.fromhex(
    "0000000000000000000000420000000202" "5190c85a" "0030" "00000000" "0000000000000005" "0000000000000005"
    "0000000000000001" "0000" "ffffffff" "00000001" "2000000008000000000c00000000000000")


def test_commit_marker_is_kafkas_bytes():
    data = build_marker_batch(4242, 7, True, 3, 1700000000123)
    assert data == KAFKA_COMMIT
    (base_offset, length, leader_epoch, magic, _crc, attributes, last_delta, base_ts, max_ts, pid, epoch,
     base_sequence, count) = HEADER.unpack_from(data)
    assert (base_offset, length, leader_epoch, magic) == (0, len(data) - 12, -1, 2)
    assert attributes == 0x30  # transactional (0x10) + control (0x20)
    assert (last_delta, base_ts, max_ts, pid, epoch, base_sequence, count) == (
        0, 1700000000123, 1700000000123, 4242, 7, -1, 1)
    record = data[HEADER.size:]
    assert record[0] == 0x20  # varint length 16
    assert record[5:9] == struct.pack(">hh", 0, 1)  # key: version 0, type COMMIT
    assert record[10:16] == struct.pack(">hi", 0, 3)  # value: EndTxnMarker v0, coordinator epoch 3


def test_abort_marker_is_kafkas_bytes():
    assert build_marker_batch(1, 0, False, 0, 5, partition_leader_epoch=2) == KAFKA_ABORT


@given(st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.booleans(), st.integers(-(2**31), 2**31 - 1),
       st.integers(0, 2**50))
def test_round_trip(pid, epoch, commit, coordinator_epoch, timestamp):
    batch = RecordBatch(build_marker_batch(pid, epoch, commit, coordinator_epoch, timestamp))
    ensure_valid(batch)
    assert batch.is_control and batch.is_transactional
    assert read_marker(batch) == ControlMarker(pid, epoch, commit, coordinator_epoch)


def test_reads_kafkas_markers():
    assert read_marker(RecordBatch(KAFKA_COMMIT)) == ControlMarker(4242, 7, True, 3)
    assert read_marker(RecordBatch(KAFKA_ABORT)) == ControlMarker(1, 0, False, 0)


def control_batch(key: bytes | None, value: bytes | None, records: int = 1) -> RecordBatch:
    return RecordBatch(build_batch([(key, value, 1)] * records, producer_id=1, producer_epoch=0,
                                   is_transactional=True, is_control=True))


def test_other_control_types_end_no_transaction():
    assert read_marker(control_batch(struct.pack(">hh", 0, 2), b"\x00\x00\x00\x00\x00\x00")) is None  # LEADER_CHANGE
    assert control_type(struct.pack(">hh", 0, 3)) == 3


def test_refuses_malformed_control_batches():
    with pytest.raises(CorruptRecordError):
        read_marker(RecordBatch(build_batch([(b"k", b"v", 1)])))  # not a control batch
    with pytest.raises(CorruptRecordError):
        read_marker(control_batch(struct.pack(">hh", 0, COMMIT), struct.pack(">hi", 0, 1), records=2))
    with pytest.raises(CorruptRecordError):
        read_marker(control_batch(None, struct.pack(">hi", 0, 1)))
    with pytest.raises(CorruptRecordError):
        read_marker(control_batch(b"\x00", struct.pack(">hi", 0, 1)))
    with pytest.raises(CorruptRecordError):
        read_marker(control_batch(struct.pack(">hh", -1, ABORT), struct.pack(">hi", 0, 1)))
    with pytest.raises(CorruptRecordError):
        read_marker(control_batch(struct.pack(">hh", 0, ABORT), None))
    with pytest.raises(CorruptRecordError):
        read_marker(control_batch(struct.pack(">hh", 0, ABORT), b"\x00\x00\x00"))
