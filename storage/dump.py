"""Decode __consumer_offsets and __transaction_state segments to one line per record (Kafka's
OffsetsMessageFormatter / TransactionLogMessageFormatter job).

Reads our segments or ones copied from a Kafka broker (the format is the same). A path
may be a `.log` segment or a partition directory (all its segments, in offset order).
A path in a `__transaction_state-N` directory (or any path with transaction_log=True, the CLI's
--transaction-log-decoder) decodes as transaction log records (storage/dump_txn.py), others as
offsets records. Control batches (transaction markers) print as such in every dump.

KIP-848 consumer-group records (types 3-8, 16) and KIP-932 share-group records (types 9-15) print with
their key's and value's fields under Kafka's JSON names (`"key": {"groupId", "memberId"}`,
`"value": {"version", "memberEpoch", ...}`), topic ids as Kafka prints a Uuid (base64url, no padding), bytes
in base64; other record types (streams groups...) print as "unknown" with their key version.

A path in a `__share_group_state-N` directory (or any path with share_state_log=True, the CLI's
--share-group-state-decoder, Kafka's kafka-dump-log flag) decodes as the share coordinator's ShareSnapshot /
ShareUpdate records (storage/share_state_records.py), the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from . import consumer_group_records as consumer_groups, share_group_records, share_state_records
from .batch import decode_records, ensure_valid, iter_batches
from .dump_txn import ControlEntry, control_entry, control_text_line, describe_control, describe_txn, txn_text_line
from .errors import RecordError
from .records import (
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordType,
    Value,
    decode_key,
    decode_value,
    read_offset_key,
    read_offset_value,
    value_fields,
)


class DumpError(Exception):
    """A segment that cannot be read to its end; names the file and position."""


TRANSACTION_LOG_PREFIX = "__transaction_state-"
SHARE_STATE_LOG_PREFIX = "__share_group_state-"
Entry = tuple[int, bytes | None, bytes | None] | ControlEntry  # a record (offset, key, value) or a control batch


def segment_files(path: str) -> list[str]:
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(".log"))
        return [os.path.join(path, n) for n in names]
    return [path]


def _partition_dir_name(path: str) -> str:
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    return os.path.basename(os.path.normpath(directory))


def is_transaction_log(path: str) -> bool:
    """Whether `path` (a partition directory, or a segment in one) belongs to __transaction_state."""
    return _partition_dir_name(path).startswith(TRANSACTION_LOG_PREFIX)


def is_share_state_log(path: str) -> bool:
    """Whether `path` (a partition directory, or a segment in one) belongs to __share_group_state."""
    return _partition_dir_name(path).startswith(SHARE_STATE_LOG_PREFIX)


def iter_log_records(path: str) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record, verifying each batch's CRC."""
    for segment in segment_files(path):
        with open(segment, "rb") as handle:
            data = handle.read()
        yield from iter_batch_records(segment, data)


def iter_log_entries(path: str) -> Iterator[Entry]:
    """iter_log_records with the control batches too (as ControlEntry), for the dumps."""
    for segment in segment_files(path):
        with open(segment, "rb") as handle:
            data = handle.read()
        yield from iter_batch_entries(segment, data)


def iter_batch_records(label: str, data: bytes) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record of ``data`` (whole batches: a segment file's content, or
    PostgreSQL rows' bytes in offset order), verifying each batch's CRC; errors name ``label``.
    Control batches are skipped."""
    for entry in _iter_entries(label, data, controls=False):
        assert not isinstance(entry, ControlEntry)
        yield entry


def iter_batch_entries(label: str, data: bytes) -> Iterator[Entry]:
    """iter_batch_records with each control batch as a ControlEntry, in log order."""
    return _iter_entries(label, data, controls=True)


def _iter_entries(label: str, data: bytes, controls: bool) -> Iterator[Entry]:
    position = 0
    try:
        for batch in iter_batches(data):
            position = batch.position
            ensure_valid(batch)
            if not batch.is_control:
                for record in decode_records(batch):
                    yield record.offset, record.key, record.value
            elif controls:
                yield control_entry(batch)
            position += batch.size
    except RecordError as exc:
        raise DumpError(f"{label}: bad batch at position {position}: {exc}") from None
    if position != len(data):
        raise DumpError(f"{label}: {len(data) - position} bytes of a partial batch at position {position}")


def describe(offset: int, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One record as the JSON object dump-log --json prints; a record that is not an offsets one (a topic
    log's, a damaged one) prints as "unknown" with the error."""
    try:
        return _describe(offset, key, value)
    except RecordError as exc:
        return {"offset": offset, "type": "unknown", "error": str(exc)}


def _describe(offset: int, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    if key is None:
        return {"offset": offset, "type": "unknown", "error": "record has no key"}
    if consumer_groups.is_consumer_group_key(key):
        return consumer_groups.FAMILY.describe(offset, key, value)
    if share_group_records.is_share_group_key(key):
        return share_group_records.FAMILY.describe(offset, key, value)
    fields = read_offset_key(key)  # the hand-packed codec for what Kafka writes, else the schema walk
    try:
        key_version, parsed = (1, OffsetCommitKey(*fields)) if fields is not None else decode_key(key)
    except UnknownRecordType:
        return {"offset": offset, "type": "unknown", "key_version": int.from_bytes(key[:2], "big", signed=True)}
    out: dict[str, Any] = {"offset": offset, "key_version": key_version, "group": parsed.group}
    if isinstance(parsed, OffsetCommitKey):
        out["type"] = "offset_commit"
        out["topic"], out["partition"] = parsed.topic, parsed.partition
    else:
        out["type"] = "group_metadata"
    decoded: tuple[int, Value] | None
    if isinstance(parsed, OffsetCommitKey) and value is not None:
        decoded = (int.from_bytes(value[:2], "big", signed=True), OffsetCommitValue(*read_offset_value(value)))
    else:
        decoded = decode_value(parsed, value)
    if decoded is None:
        out["value"] = None
    else:
        version, parsed_value = decoded
        out["value"] = {"version": version, **value_fields(parsed_value, version)}
    return {k: out[k] for k in ("offset", "type", "key_version", "group", "topic", "partition", "value") if k in out}


def describe_share_state(offset: int, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """A __share_group_state record as dump-log --json prints it ("unknown" with the error for one that
    does not decode, e.g. a record type other than ShareSnapshot / ShareUpdate)."""
    if key is None:
        return {"offset": offset, "type": "unknown", "error": "record has no key"}
    try:
        return share_state_records.FAMILY.describe(offset, key, value)
    except RecordError as exc:
        return {"offset": offset, "type": "unknown", "error": str(exc)}


def text_line(record: dict[str, Any]) -> str:
    """A readable one-line form of `describe`'s output."""
    head = f"offset={record['offset']} {record['type']}"
    if "group" in record:
        head += f" group={record['group']!r}"
    if record["type"] == "offset_commit":
        head += f" topic={record['topic']!r} partition={record['partition']}"
    if record["type"] == "unknown":
        if "error" in record:
            return head + f" error={record['error']!r}"
        return head + f" key_version={record.get('key_version')}"
    for name, item in record.get("key", {}).items():
        if name != "groupId":
            head += f" {name}={item!r}"
    value = record["value"]
    if value is None:
        return head + " :: tombstone"
    parts = []
    for name, item in value.items():
        if name == "members":
            members = ", ".join(
                "{" + " ".join(f"{k}={v!r}" for k, v in member.items()) + "}" for member in item)
            parts.append(f"members=[{members}]")
        else:
            parts.append(f"{name}={item!r}")
    return head + " :: " + " ".join(parts)


def dump(paths: list[str], as_json: bool, out, transaction_log: bool = False, share_state_log: bool = False) -> int:
    """Write one line per record (and per control batch) to `out`; returns the number of lines. Records
    decode as __transaction_state's when `transaction_log` or the path is a __transaction_state-N one, as
    __share_group_state's when `share_state_log` or the path is a __share_group_state-N one."""
    count = 0
    for path in paths:
        count += write_records(iter_log_entries(path), as_json, out, transaction_log or is_transaction_log(path),
                               share_state_log or is_share_state_log(path))
    return count


def write_records(records: Iterable[Entry], as_json: bool, out, transaction_log: bool = False,
                  share_state_log: bool = False) -> int:
    count = 0
    for entry in records:
        if isinstance(entry, ControlEntry):
            record, render = describe_control(entry), control_text_line
        elif transaction_log:
            record, render = describe_txn(*entry), txn_text_line
        elif share_state_log:
            record, render = describe_share_state(*entry), text_line
        else:
            record, render = describe(*entry), text_line
        out.write((json.dumps(record) if as_json else render(record)) + "\n")
        count += 1
    return count
