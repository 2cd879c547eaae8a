"""Typed errors of the storage layer.

Two families, because the server answers them differently:

* ``RecordError`` and subclasses: the *input* is bad (a client's batch, or bytes read
  back from disk that fail their checks). Nothing was written because of it.
* ``StorageError``: the *disk* failed (write, fsync, open). The log that raised it is
  no longer trustworthy in memory and refuses further appends until reopened.

Each class carries the name and numeric code of the Kafka error it stands for, so
that the protocol layer can map every storage failure to a wire error in one place
(``getattr(exc, "kafka_error_code", UNKNOWN_SERVER_ERROR)``) without this package
importing anything from ``protocol/``.
"""

from __future__ import annotations


class RecordError(ValueError):
    """Base class: a record batch (or its records) is not acceptable."""

    kafka_error = "CORRUPT_MESSAGE"
    kafka_error_code = 2


class CorruptRecordError(RecordError):
    """Bad CRC, impossible length, truncated batch: the bytes were damaged."""

    kafka_error = "CORRUPT_MESSAGE"
    kafka_error_code = 2


class InvalidRecordError(RecordError):
    """Well-formed bytes with invalid content: wrong magic, count mismatch, bad record."""

    kafka_error = "INVALID_RECORD"
    kafka_error_code = 87


class DecompressedTooLargeError(InvalidRecordError):
    """Compressed records that inflate past the cap (a decompression bomb): INVALID_RECORD,
    Kafka's code for records whose content cannot be accepted (LogValidator's record errors)."""


class UnsupportedCompressionError(RecordError):
    """A compression codec this build cannot decode (or an unknown codec id)."""

    kafka_error = "UNSUPPORTED_COMPRESSION_TYPE"
    kafka_error_code = 76


class RecordTooLargeError(RecordError):
    """A batch larger than segment_bytes (Kafka: RECORD_LIST_TOO_LARGE)."""

    kafka_error = "RECORD_LIST_TOO_LARGE"
    kafka_error_code = 18


class StorageError(OSError):
    """An I/O failure of the log (write, fsync, file handling) or a log already failed."""

    kafka_error = "KAFKA_STORAGE_ERROR"
    kafka_error_code = 56


class LogClosedError(StorageError):
    """The log was closed (or deleted) while an operation needed it."""


class OffsetOutOfRangeError(LookupError):
    """A read asked for an offset outside [log_start_offset, log_end_offset]."""

    kafka_error = "OFFSET_OUT_OF_RANGE"
    kafka_error_code = 1
