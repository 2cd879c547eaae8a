"""What a read_committed reader of a partition gets: the whole batches below the last stable offset, and the
aborted transactions that overlap them (Kafka's collectAbortedTxns). Fetch (handlers/fetch.py) and ShareFetch
(coordinator/share/runtime/share_reads.py) read the same way."""

from __future__ import annotations

import struct
from typing import Any

from storage.batch import LOG_OVERHEAD

_OFFSET_LENGTH = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_LAST_DELTA_AT = 23  # lastOffsetDelta's position in a batch header


def committed_part(records: bytes, end: int) -> tuple[bytes, int]:
    """(the whole batches of `records` below offset `end`, the offset after the last of them; -1 if none)."""
    position, upper, size = 0, -1, len(records)
    while position < size:
        base, length = _OFFSET_LENGTH.unpack_from(records, position)
        if base >= end:
            break
        upper = base + _LAST_DELTA.unpack_from(records, position + _LAST_DELTA_AT)[0] + 1
        position += length + LOG_OVERHEAD
    return (records if position >= size else records[:position]), upper


def aborted_transactions(target: Any, offset: int, records: bytes, lso: int, hw: int) -> tuple[bytes, list[dict]]:
    """read_committed: the records below the LSO and the aborted transactions that overlap them."""
    txns = target.producers.txns
    if lso >= hw and not txns.aborted:
        return records, []  # nothing to cut, nothing to list: no header walk
    records, upper = committed_part(records, lso)
    if upper < 0:
        return b"", []
    return records, [{"producer_id": txn.producer_id, "first_offset": txn.first_offset}
                     for txn in txns.aborted_in(offset, upper)]
