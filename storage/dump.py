"""Decode __consumer_offsets segments to one line per record (Kafka's OffsetsMessageFormatter job).

Reads our segments or ones copied from a Kafka broker (the format is the same). A path
may be a `.log` segment or a partition directory (all its segments, in offset order).
Control batches (transaction markers) carry no offsets records and are skipped.

KIP-848 consumer-group records (types 3-8, 16) print with their key's and value's fields under
Kafka's JSON names (`"key": {"groupId", "memberId"}`, `"value": {"version", "memberEpoch", ...}`),
topic ids as Kafka prints a Uuid (base64url, no padding), bytes in base64; other record types
(share groups...) print as "unknown" with their key version.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from . import consumer_group_records as consumer_groups
from .batch import decode_records, ensure_valid, iter_batches
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


def segment_files(path: str) -> list[str]:
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(".log"))
        return [os.path.join(path, n) for n in names]
    return [path]


def iter_log_records(path: str) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record, verifying each batch's CRC."""
    for segment in segment_files(path):
        with open(segment, "rb") as handle:
            data = handle.read()
        yield from iter_batch_records(segment, data)


def iter_batch_records(label: str, data: bytes) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record of ``data`` (whole batches: a segment file's content, or
    PostgreSQL rows' bytes in offset order), verifying each batch's CRC; errors name ``label``."""
    position = 0
    try:
        for batch in iter_batches(data):
            position = batch.position
            ensure_valid(batch)
            if not batch.is_control:
                for record in decode_records(batch):
                    yield record.offset, record.key, record.value
            position += batch.size
    except RecordError as exc:
        raise DumpError(f"{label}: bad batch at position {position}: {exc}") from None
    if position != len(data):
        raise DumpError(f"{label}: {len(data) - position} bytes of a partial batch at position {position}")


def describe(offset: int, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One record as the JSON object dump-log --json prints."""
    if key is None:
        return {"offset": offset, "type": "unknown", "error": "record has no key"}
    if consumer_groups.is_consumer_group_key(key):
        return describe_consumer_group(offset, key, value)
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


def describe_consumer_group(offset: int, key: bytes, value: bytes | None) -> dict[str, Any]:
    """A consumer-group record as dump-log --json prints it (see the module docstring)."""
    parsed = consumer_groups.decode_key(key)
    kind = consumer_groups.record_type(parsed)
    out: dict[str, Any] = {"offset": offset, "type": kind.name, "key_version": kind.id, "group": parsed.group,
                           "key": consumer_groups.key_json(parsed)}
    decoded = consumer_groups.decode_value(parsed, value)
    if decoded is None:
        out["value"] = None
    else:
        version, parsed_value = decoded
        out["value"] = {"version": version, **consumer_groups.value_json(parsed, parsed_value, version)}
    return out


def text_line(record: dict[str, Any]) -> str:
    """A readable one-line form of `describe`'s output."""
    head = f"offset={record['offset']} {record['type']}"
    if "group" in record:
        head += f" group={record['group']!r}"
    if record["type"] == "offset_commit":
        head += f" topic={record['topic']!r} partition={record['partition']}"
    if record["type"] == "unknown":
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


def dump(paths: list[str], as_json: bool, out) -> int:
    """Write one line per record to `out`; returns the number of records."""
    return write_records((record for path in paths for record in iter_log_records(path)), as_json, out)


def write_records(records: Iterable[tuple[int, bytes | None, bytes | None]], as_json: bool, out) -> int:
    count = 0
    for offset, key, value in records:
        record = describe(offset, key, value)
        out.write((json.dumps(record) if as_json else text_line(record)) + "\n")
        count += 1
    return count
