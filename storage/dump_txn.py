"""dump-log's lines for transactions: __transaction_state records and control batches (transaction markers).

A __transaction_state record prints as Kafka's TransactionLogMessageFormatter shapes it
(`{"key": {"version", "data": {"transactionalId"}}, "value": {"version", "data": {...}}}`, Kafka's JSON field
names), with the record's offset, a "type" and the state's name added; a tombstone has `"value": null`; a key
or value version Kafka does not define has `"data": "unknown"`. A control batch prints in any partition's dump
as its control type (Kafka's ControlRecordType names) and, for COMMIT/ABORT, the batch's producer id and epoch
and the marker's coordinator epoch (what Kafka's DumpLogSegments shows as "endTxnMarker").
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .batch import RecordBatch, decode_records
from .control_records import ABORT, COMMIT, control_type, read_marker
from .errors import RecordError
from .txn_log_records import (
    UnknownTxnRecordVersion,
    decode_txn_key,
    decode_txn_value,
    key_json,
    status_name,
    value_json,
)

CONTROL_TYPE_NAMES = {  # Kafka's ControlRecordType
    ABORT: "ABORT", COMMIT: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION", 6: "KRAFT_VOTERS",
}


class ControlEntry(NamedTuple):
    """One control batch of a log, as dump-log prints it."""

    offset: int
    producer_id: int
    producer_epoch: int
    control_type: int
    coordinator_epoch: int | None  # COMMIT/ABORT markers only


def control_entry(batch: RecordBatch) -> ControlEntry:
    """The control batch's entry; CorruptRecordError (a RecordError) when it is malformed."""
    marker = read_marker(batch)
    if marker is not None:
        return ControlEntry(batch.base_offset, marker.producer_id, marker.producer_epoch,
                            COMMIT if marker.commit else ABORT, marker.coordinator_epoch)
    record = decode_records(batch)[0]  # read_marker checked there is exactly one
    return ControlEntry(record.offset, batch.producer_id, batch.producer_epoch, control_type(record.key), None)


def describe_control(entry: ControlEntry) -> dict[str, Any]:
    kind = CONTROL_TYPE_NAMES.get(entry.control_type, f"UNKNOWN({entry.control_type})")
    out: dict[str, Any] = {"offset": entry.offset,
                           "type": "end_txn_marker" if entry.coordinator_epoch is not None else "control",
                           "controlType": kind, "producerId": entry.producer_id,
                           "producerEpoch": entry.producer_epoch}
    if entry.coordinator_epoch is not None:
        out["coordinatorEpoch"] = entry.coordinator_epoch
    return out


def control_text_line(record: dict[str, Any]) -> str:
    what = "marker" if record["type"] == "end_txn_marker" else "control record"
    line = (f"offset={record['offset']} {record['controlType']} {what} producerId={record['producerId']} "
            f"producerEpoch={record['producerEpoch']}")
    if "coordinatorEpoch" in record:
        line += f" coordinatorEpoch={record['coordinatorEpoch']}"
    return line


def _version(data: bytes) -> int | None:
    return int.from_bytes(data[:2], "big", signed=True) if len(data) >= 2 else None


def _key_part(key: bytes | None) -> tuple[dict[str, Any] | None, bool]:
    if key is None:
        return None, False
    try:
        return {"version": _version(key), "data": key_json(decode_txn_key(key))}, True
    except UnknownTxnRecordVersion:
        return {"version": _version(key), "data": "unknown"}, False
    except RecordError as exc:
        return {"version": _version(key), "data": "unknown", "error": str(exc)}, False


def _value_part(value: bytes | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        version, parsed = decode_txn_value(value)
    except UnknownTxnRecordVersion:
        return {"version": _version(value), "data": "unknown"}
    except RecordError as exc:
        return {"version": _version(value), "data": "unknown", "error": str(exc)}
    return {"version": version, "state": status_name(parsed.transaction_status), "data": value_json(parsed, version)}


def describe_txn(offset: int, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One __transaction_state record as dump-log --json prints it (see the module docstring)."""
    key_part, known = _key_part(key)
    return {"offset": offset, "type": "transaction_metadata" if known else "unknown", "key": key_part,
            "value": _value_part(value)}


def _item(name: str, item: Any) -> str:
    if name == "transactionPartitions" and item is not None:
        return "[" + ",".join(f"{p['topic']}-{n}" for p in item for n in p["partitionIds"]) + "]"
    return "null" if item is None else str(item)


def txn_text_line(record: dict[str, Any]) -> str:
    """A readable one-line form of `describe_txn`'s output."""
    head = f"offset={record['offset']} {record['type']}"
    key = record["key"]
    if key is None:
        head += " key=null"
    elif key["data"] == "unknown":
        head += f" key_version={key['version']}"
    else:
        head += f" transactionalId={key['data']['transactionalId']!r}"
    value = record["value"]
    if value is None:
        return head + " :: tombstone"
    if value["data"] == "unknown":
        return head + f" :: value_version={value['version']} unknown" + (
            f" error={value['error']!r}" if "error" in value else "")
    parts = [f"version={value['version']}"]
    for name, item in value["data"].items():
        parts.append(f"{name}={_item(name, item)}")
        if name == "transactionStatus":
            parts.append(f"state={value['state']}")
    return head + " :: " + " ".join(parts)
