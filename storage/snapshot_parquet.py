"""Snapshots of format 1 (groups.parquet, offsets.parquet, consumer_groups.parquet; storage/snapshot.py has the
layout), which the bulk-load job wrote before format 2, and the pyarrow check of the snapshot writer. pyarrow (the
`snapshots` and `spark` extras) is imported only when a table is made or read: a server without it runs, and
fails only the load of such a snapshot, saying why."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from primitives.serial_import import serial_import

from .records import GroupMetadataKey, encode_key, offset_key_bytes, offset_value_bytes

GROUPS_FILE = "groups.parquet"
OFFSETS_FILE = "offsets.parquet"
CONSUMER_GROUPS_FILE = "consumer_groups.parquet"


class FormatOneError(Exception):
    """A format-1 snapshot that cannot be read: pyarrow missing, or its tables disagree with the manifest."""


def require_pyarrow(why: str) -> Any:
    try:
        pyarrow = serial_import("pyarrow")
    except ImportError:
        raise FormatOneError(f"{why} needs pyarrow, which is not installed: pip install "
                             "'kafka-group-coordinator[snapshots]' (or run the bulk load again: its snapshots of "
                             "format 2 need no pyarrow)") from None
    return pyarrow


def read_pairs(path: str, manifest: dict, read: Callable[[str], bytes]) -> list[tuple[bytes, bytes | None]]:
    """The snapshot's state as format 2's records: group metadata, consumer-group records, offsets.
    `read(name)` returns a file's bytes, checked against the manifest."""
    pa = require_pyarrow(f"reading the Parquet snapshot {os.path.basename(path)} (format 1)")
    pq = serial_import("pyarrow.parquet")

    def table(name: str) -> Any:
        return pq.read_table(pa.BufferReader(read(name)))

    groups, offsets = table(GROUPS_FILE), table(OFFSETS_FILE)
    if groups.num_rows != manifest["groups"] or offsets.num_rows != manifest["offsets"]:
        raise FormatOneError(f"{path}: row counts differ from the manifest")
    pairs: list[tuple[bytes, bytes | None]] = [
        (encode_key(GroupMetadataKey(gid)), raw)
        for gid, raw in zip(groups.column("group").to_pylist(), groups.column("value").to_pylist())
        if raw is not None]
    if CONSUMER_GROUPS_FILE in manifest["files"]:
        consumer = table(CONSUMER_GROUPS_FILE)
        if consumer.num_rows != manifest.get("consumer_group_records"):
            raise FormatOneError(f"{path}: consumer-group record count differs from the manifest")
        pairs.extend(zip(consumer.column("key").to_pylist(), consumer.column("value").to_pylist()))
    c = {name: offsets.column(name).to_pylist() for name in offsets.column_names}
    pairs.extend((offset_key_bytes(g, t, p), offset_value_bytes(o, m or "", ct, le, et))
                 for g, t, p, o, le, m, ct, et in zip(c["group"], c["topic"], c["partition"], c["offset"],
                                                      c["leader_epoch"], c["metadata"], c["commit_timestamp"],
                                                      c["expire_timestamp"]))
    return pairs
