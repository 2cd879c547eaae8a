"""Transaction markers: the control batches that end a transaction in a partition's log.

Kafka's format (ControlRecordType, EndTransactionMarker): a batch with the control and
transactional attributes set, the producer's id and epoch, base sequence -1, and one record
whose key is (int16 version 0, int16 type: 0 = ABORT, 1 = COMMIT) and whose value is
EndTxnMarker v0 (int16 version 0, int32 coordinatorEpoch). Applications never see these
records: clients skip control batches; the log uses them to end transactions.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from storage.batch import RecordBatch, build_batch, decode_records
from storage.errors import CorruptRecordError

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0


class ControlMarker(NamedTuple):
    """What one control batch says: the producer whose transaction ends, how, and the coordinator's epoch."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


def build_marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                       timestamp: int, partition_leader_epoch: int = -1) -> bytes:
    """One control batch ending `producer_id`'s transaction (base offset 0: the log assigns it)."""
    key = _KEY.pack(CONTROL_KEY_VERSION, COMMIT if commit else ABORT)
    value = _VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)
    return build_batch([(key, value, timestamp)], producer_id=producer_id, producer_epoch=producer_epoch,
                       is_transactional=True, is_control=True, partition_leader_epoch=partition_leader_epoch)


def control_type(key: bytes | None) -> int:
    """The control record type of a control record's key (ABORT, COMMIT, or another Kafka control type)."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(f"a control record key of {0 if key is None else len(key)} bytes")
    version, kind = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"a control record key of version {version}")
    return kind


def read_marker(batch: RecordBatch) -> ControlMarker | None:
    """The end-of-transaction marker a control batch carries, None for other control records
    (Kafka also has LEADER_CHANGE and snapshot control records; they end no transaction)."""
    if not batch.is_control:
        raise CorruptRecordError("not a control batch")
    records = decode_records(batch)
    if len(records) != 1:
        raise CorruptRecordError(f"a control batch with {len(records)} records")
    record = records[0]
    kind = control_type(record.key)
    if kind not in (ABORT, COMMIT):
        return None
    value = record.value
    if value is None or len(value) < _VALUE.size:
        raise CorruptRecordError("an end-transaction marker without its value")
    _version, coordinator_epoch = _VALUE.unpack_from(value)
    return ControlMarker(batch.producer_id, batch.producer_epoch, kind == COMMIT, coordinator_epoch)
