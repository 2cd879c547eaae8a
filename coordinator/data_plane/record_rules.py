"""Per-record checks a topic's configs ask for (Kafka's LogValidator.validateRecord, 3.9).

* a record without a key on a compacted topic (cleanup.policy has `compact`) ->
  INVALID_RECORD, "Compacted topic cannot accept message without key in topic partition T-P.";
* on a CreateTime topic, a record timestamp (not -1) more than message.timestamp.before.max.ms
  before now or message.timestamp.after.max.ms after now (each falls back to the deprecated
  message.timestamp.difference.max.ms when left at its default) -> INVALID_TIMESTAMP.

Every record of the batch is checked and each failure is one record error (its index in the
batch and Kafka's message); the batch then fails as a whole (LogValidator.processRecordErrors):
INVALID_TIMESTAMP if any record error is one, else INVALID_RECORD, with Kafka's exception
message as the partition's error_message (ProduceResponse v8+, KIP-467).

Only topics with such a rule pay for this walk (it reads each record's first fields); the
default topic (delete, timestamps unbounded) is not walked a second time.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.errors import RecordValidation
from storage.varint import read_varint

INT64_MAX = 2**63 - 1
NO_TIMESTAMP = -1


def _java_long(value: int) -> int:
    """A long's wrap-around, for the bounds Kafka prints."""
    return (value + 2**63) % 2**64 - 2**63


@dataclass(frozen=True)
class RecordRules:
    compacted: bool = False
    timestamp_before_max_ms: int = INT64_MAX
    timestamp_after_max_ms: int = INT64_MAX

    @property
    def active(self) -> bool:
        return self.compacted or self.timestamp_before_max_ms != INT64_MAX \
            or self.timestamp_after_max_ms != INT64_MAX


def check_records(body: bytes | memoryview, count: int, base_offset: int, first_timestamp: int, rules: RecordRules,
                  create_time: bool, topic_partition: str, now_ms: int) -> None:
    """Raise RecordValidation with every record error of the (walked, well-formed) records `body`."""
    errors: list[tuple[int, str]] = []
    timestamps = create_time and (rules.timestamp_before_max_ms != INT64_MAX
                                  or rules.timestamp_after_max_ms != INT64_MAX)
    before, after = rules.timestamp_before_max_ms, rules.timestamp_after_max_ms
    invalid_timestamp = False
    pos, rv = 0, read_varint
    for index in range(count):
        size, pos = rv(body, pos)
        end = pos + size
        at = pos + 1  # attributes
        timestamp_delta, at = rv(body, at)
        offset_delta, at = rv(body, at)
        key_length, at = rv(body, at)
        pos = end
        if rules.compacted and key_length < 0:
            errors.append((index, "Compacted topic cannot accept message without key in topic partition "
                                  f"{topic_partition}."))
            continue
        timestamp = first_timestamp + timestamp_delta
        if timestamps and timestamp != NO_TIMESTAMP:
            diff = now_ms - timestamp
            if diff > before or -diff > after:
                invalid_timestamp = True
                errors.append((index, f"Timestamp {timestamp} of message with offset {base_offset + offset_delta} "
                                      f"is out of range. The timestamp should be within "
                                      f"[{_java_long(now_ms - before)}, {_java_long(now_ms + after)}]"))
    if not errors:
        return
    if invalid_timestamp:
        raise RecordValidation("One or more records have been rejected due to invalid timestamp", errors,
                               timestamp=True)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    raise RecordValidation(f"One or more records have been rejected due to {len(errors)} record errors in total, "
                           f"and only showing the first three errors at most: [{shown}]", errors)
