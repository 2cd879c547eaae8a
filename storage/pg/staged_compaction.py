"""A compaction + expiry the Spark expire job staged in kc_blobs (kind 'staging') for a partition's
owner to apply: cluster mode's counterpart of the local ``.staging-<id>`` directories
(storage/compaction.py).

Blob bytes: a 4-byte big-endian length, a JSON header, then the cleaned rows' batches (Kafka batch
bytes, offsets kept). The header names the offsets range it covers (``first``..``last``: the rows
whose base offset lies there are replaced), the rows the job read there (base, last offset and batch
CRC of each: ``replaced``), the job's settings and its expiry tombstones (``tombstones.records``,
re-decided by the owner on live state, as in local mode).

``apply`` is the owner's fenced write: in one transaction it checks the rows are still exactly the
ones the job read (retention, DeleteRecords or the owner's own compaction since: refused, nothing
changes) and replaces them.
"""

from __future__ import annotations

import json
import struct
import uuid

from storage.batch import iter_batches

from . import batches
from .batches import BatchRow
from .log_reads import RowCrc, range_crcs

FORMAT = "kgc-pg-compaction-staging"
FORMAT_VERSION = 1
_LENGTH = struct.Struct(">I")


def encode(header: dict, cleaned: bytes) -> bytes:
    head = json.dumps({"format": FORMAT, "format_version": FORMAT_VERSION, **header}).encode()
    return _LENGTH.pack(len(head)) + head + cleaned


def decode(blob: bytes) -> tuple[dict, bytes]:
    """(header, cleaned batch bytes); ValueError for a blob that is not a staging of this format."""
    if len(blob) < _LENGTH.size:
        raise ValueError("staging blob too short")
    (n,) = _LENGTH.unpack_from(blob)
    header = json.loads(blob[_LENGTH.size:_LENGTH.size + n])
    if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"not a staging of format {FORMAT} v{FORMAT_VERSION}")
    return header, blob[_LENGTH.size + n:]


def replaced_rows(crcs: list[RowCrc]) -> list[list]:
    """The header's ``replaced`` field (JSON-friendly) for the rows a job read."""
    return [[r.base_offset, r.last_offset, r.crc.hex()] for r in crcs]


def rows_of(data: bytes) -> list[BatchRow]:
    return [BatchRow(b.base_offset, b.last_offset, b.max_timestamp, bytes(b.raw())) for b in iter_batches(data)]


async def apply(conn, topic_id: uuid.UUID, partition: int, epoch: int, header: dict, cleaned: bytes) -> list[str]:
    """Fenced (FencedError): replace the rows in [first, last] by the cleaned ones if they are still
    those the job read; returns the problems that refused it (empty: applied)."""
    first, last = int(header["first"]), int(header["last"])
    rows = rows_of(cleaned)
    async with conn.transaction():
        await batches.check_epoch(conn, topic_id, partition, epoch)
        live = replaced_rows(await range_crcs(conn, topic_id, partition, first, last))
        if live != header["replaced"]:
            return [f"rows {first}..{last} changed since the job read them "
                    f"({len(header['replaced'])} rows read, {len(live)} rows now)"]
        await batches.replace_range(conn, topic_id, partition, epoch, first, last, rows)
    return []
