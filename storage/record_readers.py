"""Readers of the records of one plain batch, for the loader's scan (storage/latest.py).

A plain batch is magic 2, uncompressed, not a control batch, its CRC already checked by
the caller. A reader hands each keyed record to a `LatestFold`: a non-null value may go
straight into `fold.latest[key]`, anything else through `fold.put(key, value)` (a
tombstone can seal the fold's current part and replace `fold.latest`).

Two readers:

* `AcceleratedRecordReader`: aiokafka's compiled record-batch parser
  (`aiokafka.record._crecords`), ~1.8x the records/s of the Python reader
  (bench/bench_offsets.py --load-mb). It is a client library's *private* module, so it is
  used only with the aiokafka versions it was tested with (`TESTED_AIOKAFKA`, pinned in
  pyproject.toml too); this module is the only place that imports it.
* `PythonRecordReader`: a loop that reads records whose size, timestamp delta, offset
  delta, key and value lengths are one-byte varints without headers (every record this
  coordinator writes, and Kafka's) inline, and any other record in the general form.

`default_reader()` picks the accelerated reader when aiokafka's C parser imports and the
installed aiokafka is in the tested range, else the Python reader. It is chosen once, under a
lock, and imports the parser through primitives.serial_import: the loader reads snapshots in worker
threads, and several threads importing the parser at once deadlocked in CPython 3.11's import locks,
which left a server's load stuck for ever with five partitions LOADING.
"""

from __future__ import annotations

import re
import threading
from importlib import metadata
from typing import Any, Protocol

from primitives.serial_import import serial_import

from .batch import HEADER_SIZE
from .errors import InvalidRecordError
from .varint import read_varint

#: [first, last) aiokafka (major, minor) versions whose C parser this reader is tested with. Its
#: source (aiokafka/record/_crecords/default_records.pyx) is byte-identical in 0.11.0 ... 0.14.0
#: (aiokafka's git tags); the tests run with the installed 0.14. A later minor version may change
#: the private module: raise the bound after the tests pass with it. Same range as pyproject.toml.
TESTED_AIOKAFKA = ((0, 11), (0, 15))


class LatestFold(Protocol):
    """Where a reader puts the records it reads (storage.latest.LatestRecords)."""

    latest: dict[bytes, bytes | None]

    def put(self, key: bytes, value: bytes | None) -> None: ...


class RecordReader(Protocol):
    """Reads the records of one plain batch into a fold."""

    def read_plain(self, data: bytes, view: memoryview, pos: int, end: int, fold: LatestFold) -> None:
        """The records of the plain batch `data[pos:end]` (`view` is memoryview(data)).
        Raises InvalidRecordError for a record that does not parse."""
        ...


class AcceleratedRecordReader:
    """aiokafka's C record-batch parser; build one with `accelerated_reader()`."""

    __slots__ = ("_batch", "_errors")

    def __init__(self, batch_class: Any, errors: tuple[type[BaseException], ...]) -> None:
        self._batch = batch_class
        self._errors = errors

    def read_plain(self, data: bytes, view: memoryview, pos: int, end: int, fold: LatestFold) -> None:
        latest = fold.latest
        try:
            for r in self._batch(view[pos:end]):
                key = r.key
                value = r.value
                if value is not None and key is not None:
                    latest[key] = value
                elif key is not None:
                    fold.put(key, None)
                    latest = fold.latest
        except self._errors as exc:
            raise InvalidRecordError(f"batch at position {pos}: {exc}") from None


class PythonRecordReader:
    """One-byte varint records inline, others in the general form (`_record`)."""

    __slots__ = ()

    def read_plain(self, data: bytes, view: memoryview, pos: int, end: int, fold: LatestFold) -> None:
        latest = fold.latest
        p = pos + HEADER_SIZE
        while p < end:
            s = data[p]
            kb = data[p + 4]
            # one-byte size, timestamp delta, offset delta and key length; key not null
            if not ((s | data[p + 2] | data[p + 3]) & 0x80 | kb & 0x81):
                v = p + 5 + (kb >> 1)
                vb = data[v]
                nxt = p + 1 + (s >> 1)
                # one-byte value length, value not null, no headers, fields fill the record
                if not vb & 0x81 and v + 2 + (vb >> 1) == nxt and not data[nxt - 1]:
                    latest[data[p + 5:v]] = data[v + 1:nxt - 1]
                    p = nxt
                    continue
            p = _record(data, p, end, fold)
            latest = fold.latest
        if p != end:
            raise InvalidRecordError(f"records of the batch at position {pos} run {p - end} bytes past it")


def _record(data: bytes, p: int, end: int, fold: LatestFold) -> int:
    """One record in the general form into `fold`; returns the position after it."""
    rv = read_varint
    size, p = rv(data, p)
    body_end = p + size
    if size < 0 or body_end > end:
        raise InvalidRecordError(f"record size {size} runs past the batch")
    p += 1  # attributes
    _ts_delta, p = rv(data, p)
    _offset_delta, p = rv(data, p)
    klen, p = rv(data, p)
    key = None
    if klen >= 0:
        key, p = data[p:p + klen], p + klen
    vlen, p = rv(data, p)
    value = None
    if vlen >= 0:
        value, p = data[p:p + vlen], p + vlen
    headers, p = rv(data, p)
    if headers < 0 or headers > body_end - p:
        raise InvalidRecordError(f"invalid header count {headers}")
    for _ in range(headers):
        hk, p = rv(data, p)
        p += max(hk, 0)
        hv, p = rv(data, p)
        p += max(hv, 0)
    if p != body_end:
        raise InvalidRecordError(f"record body is {size} bytes but its fields take {size + p - body_end}")
    if key is not None:
        fold.put(key, value)
    return p


def accelerated_reader(aiokafka_version: str | None) -> AcceleratedRecordReader | None:
    """The C parser's reader, or None: aiokafka missing, outside TESTED_AIOKAFKA, or built
    without its compiled extension."""
    if aiokafka_version is None or not _tested(aiokafka_version):
        return None
    try:
        errors = serial_import("aiokafka.errors")
        records = serial_import("aiokafka.record._crecords.default_records")
    except ImportError:
        return None
    return AcceleratedRecordReader(records.DefaultRecordBatch, (errors.KafkaError, ValueError))


def _tested(version: str) -> bool:
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        return False
    first, last = TESTED_AIOKAFKA
    return first <= (int(match[1]), int(match[2])) < last


def installed_aiokafka() -> str | None:
    try:
        return metadata.version("aiokafka")
    except metadata.PackageNotFoundError:
        return None


_chosen: RecordReader | None = None
_choosing = threading.Lock()


def default_reader() -> RecordReader:
    """The accelerated reader if it can be used here, else the Python reader (chosen once, one thread at a
    time: see the module's docstring)."""
    chosen = _chosen
    if chosen is not None:
        return chosen
    return _choose()


def _choose() -> RecordReader:
    global _chosen
    with _choosing:
        if _chosen is None:
            _chosen = accelerated_reader(installed_aiokafka()) or PythonRecordReader()
        return _chosen
