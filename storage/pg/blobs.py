"""kc_blobs: named byte strings per partition that are not log rows.

Kinds: ``staging`` (a compaction + expiry the Spark expire job staged for the partition's owner to
apply) and ``snapshot`` (bulk load). A blob is written whole in one statement, so a reader sees all
of it or nothing: no temp-and-rename dance as with the staging directories of local mode.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

STAGING = "staging"
SNAPSHOT = "snapshot"


class BlobInfo(NamedTuple):
    name: str
    size: int


async def put(conn, kind: str, topic_id: uuid.UUID, partition: int, name: str, data: bytes) -> None:
    """Write (or overwrite) one blob."""
    await conn.execute(
        "INSERT INTO kc_blobs (kind, topic_id, partition, name, data) VALUES ($1, $2, $3, $4, $5) "
        "ON CONFLICT (kind, topic_id, partition, name) DO UPDATE SET data = excluded.data, created_at = now()",
        kind, topic_id, partition, name, data)


async def get(conn, kind: str, topic_id: uuid.UUID, partition: int, name: str) -> bytes | None:
    return await conn.fetchval("SELECT data FROM kc_blobs WHERE kind = $1 AND topic_id = $2 AND partition = $3 "
                               "AND name = $4", kind, topic_id, partition, name)


async def names(conn, kind: str, topic_id: uuid.UUID, partition: int) -> list[BlobInfo]:
    """The partition's blobs of ``kind``, oldest first (name order among equals)."""
    rows = await conn.fetch("SELECT name, octet_length(data) FROM kc_blobs WHERE kind = $1 AND topic_id = $2 "
                            "AND partition = $3 ORDER BY created_at, name", kind, topic_id, partition)
    return [BlobInfo(*r) for r in rows]


async def delete(conn, kind: str, topic_id: uuid.UUID, partition: int, name: str) -> bool:
    status = await conn.execute("DELETE FROM kc_blobs WHERE kind = $1 AND topic_id = $2 AND partition = $3 "
                                "AND name = $4", kind, topic_id, partition, name)
    return status != "DELETE 0"
