"""Bulk-load snapshots in cluster mode: kc_blobs rows of kind 'snapshot'.

A blob is one published snapshot directory (storage/snapshot.py: MANIFEST.json + records.log, or format 1's
Parquet files) as an uncompressed tar, named as the directory is. The bulk-load job puts all of its snapshots in
one transaction (its publish step); a node taking an
offsets partition copies that partition's snapshot blobs into a local snapshot root and loads as in
local mode (runtime/loader.py picks the newest usable one).
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import tarfile
import uuid

from storage.snapshot import PREFIX, TMP_PREFIX, partition_root, publish_snapshot

from . import blobs


def pack(path: str) -> bytes:
    """A published or prepared snapshot directory as tar bytes."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name in sorted(os.listdir(path)):
            tar.add(os.path.join(path, name), arcname=name, recursive=False)
    return out.getvalue()


async def put_all(conn, topic_id: uuid.UUID, snapshots: list[tuple[int, str, bytes]]) -> None:
    """Publish (partition, snapshot name, pack()ed bytes) items: all of them or none."""
    async with conn.transaction():
        for partition, name, data in snapshots:
            await blobs.put(conn, blobs.SNAPSHOT, topic_id, partition, name, data)


async def fetch(conn, topic_id: uuid.UUID, partition: int, root: str) -> int:
    """Copy the partition's snapshot blobs missing under ``root`` into it (each unpacked into a temp
    directory, then published by rename, as the job publishes); returns how many were copied."""
    base = partition_root(root, partition)
    copied = 0
    for info in await blobs.names(conn, blobs.SNAPSHOT, topic_id, partition):
        if not info.name.startswith(PREFIX) or os.sep in info.name or os.path.exists(os.path.join(base, info.name)):
            continue
        data = await blobs.get(conn, blobs.SNAPSHOT, topic_id, partition, info.name)
        if data is None:
            continue  # deleted meanwhile
        await asyncio.to_thread(_unpack, data, os.path.join(base, TMP_PREFIX + info.name[len(PREFIX):]))
        copied += 1
    return copied


def _unpack(data: bytes, tmp: str) -> None:
    """A packed snapshot into `tmp`, then published. A snapshot directory is flat: every member must be a regular
    file with a plain name (no path, no link), else ValueError -- written here member by member, not with
    extractall, whose `filter` argument Python 3.11 has only from 3.11.4 (the image's Debian bookworm has 3.11.2)."""
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            name = member.name
            if not member.isfile() or not name or os.sep in name or "/" in name or name in (".", ".."):
                raise ValueError(f"snapshot blob member {name!r}: not a plain file name")
            source = tar.extractfile(member)
            assert source is not None  # a regular file
            with open(os.path.join(tmp, name), "wb") as out:
                shutil.copyfileobj(source, out)
    publish_snapshot(tmp)
