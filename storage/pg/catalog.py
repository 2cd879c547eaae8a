"""The topic catalog's rows: kc_topics and the kc_partitions rows of each topic.

Every change is one transaction: created topics with their partition rows, deleted
topics with every row keyed by their id (partitions, batches, blobs). Creation is
`INSERT ... ON CONFLICT (name) DO NOTHING`, so two nodes creating one name make one
topic and the loser reads the winner's row. A change NOTIFYs channel kc_cluster with
'topics' (delivered at commit), so other nodes re-read the catalog.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import NamedTuple

import asyncpg

from storage.pg.connect import unavailable_as_store_error

CHANNEL = "kc_cluster"
TOPICS_CHANGED = "topics"

_SELECT = "SELECT name, topic_id, partitions, configs::text, internal FROM kc_topics"

_INSERT_TOPICS = """
INSERT INTO kc_topics (name, topic_id, partitions, configs, internal)
SELECT t.name, t.topic_id, t.partitions, t.configs::jsonb, t.internal
FROM unnest($1::text[], $2::uuid[], $3::int[], $4::text[], $5::bool[])
     AS t(name, topic_id, partitions, configs, internal)
ON CONFLICT (name) DO NOTHING
RETURNING name"""

_INSERT_PARTITIONS = """
INSERT INTO kc_partitions (topic_id, partition)
SELECT t.topic_id, p.index
FROM unnest($1::uuid[], $2::int[]) AS t(topic_id, partitions), generate_series(0, t.partitions - 1) AS p(index)
ON CONFLICT DO NOTHING"""

# Partition rows first: an append in flight holds its row FOR SHARE, so the delete waits for it,
# and an append after it finds no row (fenced).
_DELETE = ("DELETE FROM kc_partitions WHERE topic_id = ANY($1::uuid[])",
           "DELETE FROM kc_batches WHERE topic_id = ANY($1::uuid[])",
           "DELETE FROM kc_blobs WHERE topic_id = ANY($1::uuid[])",
           "DELETE FROM kc_topics WHERE topic_id = ANY($1::uuid[]) AND NOT internal")


class TopicRow(NamedTuple):
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str]
    internal: bool = False


def _row(record: asyncpg.Record) -> TopicRow:
    return TopicRow(record[0], record[1], record[2], json.loads(record[3]), record[4])


async def read_topics(pool: asyncpg.Pool) -> list[TopicRow]:
    """Every topic of the cluster, the internal one included."""
    with unavailable_as_store_error("read the topic catalog"):
        return [_row(r) for r in await pool.fetch(_SELECT)]


async def apply_changes(pool: asyncpg.Pool, added: Sequence[TopicRow],
                        removed: Sequence[uuid.UUID] = ()) -> list[TopicRow]:
    """Delete the `removed` topic ids and create `added`, in one transaction; returns for each
    added topic the row now stored under its name (another id: another node created it first)."""
    with unavailable_as_store_error("write the topic catalog"):
        async with pool.acquire() as conn, conn.transaction():
            changed = False
            if removed:
                for statement in _DELETE:
                    changed = await conn.execute(statement, list(removed)) != "DELETE 0" or changed
            stored: dict[str, TopicRow] = {}
            pending = list(added)
            while pending:  # a name found taken but deleted before we read it is tried again
                inserted = {r[0] for r in await conn.fetch(_INSERT_TOPICS, *_columns(pending))}
                mine = [t for t in pending if t.name in inserted]
                if mine:
                    await conn.execute(_INSERT_PARTITIONS, [t.topic_id for t in mine], [t.partitions for t in mine])
                    stored.update((t.name, t) for t in mine)
                    changed = True
                taken = [t.name for t in pending if t.name not in inserted]
                if taken:
                    stored.update((r[0], _row(r)) for r in await conn.fetch(_SELECT + " WHERE name = ANY($1::text[])",
                                                                              taken))
                pending = [t for t in pending if t.name not in stored]
            if changed:
                await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, TOPICS_CHANGED)
    return [stored[t.name] for t in added]


def _columns(rows: Sequence[TopicRow]) -> tuple[list, ...]:
    return ([t.name for t in rows], [t.topic_id for t in rows], [t.partitions for t in rows],
            [json.dumps(t.configs, sort_keys=True) for t in rows], [t.internal for t in rows])
