"""The topic catalog's rows: kc_topics and the kc_partitions rows of each topic.

Every change is one transaction: created topics with their partition rows, deleted
topics with every row keyed by their id (partitions, batches, blobs), a topic grown (its
new count and partition rows, only from the count the writer saw). Creation is
`INSERT ... ON CONFLICT DO NOTHING`, so two nodes creating one name make one
topic and the loser reads the winner's row. A change NOTIFYs kc_cluster 'topics' (and
'partitions'), delivered at commit, so other nodes re-read the catalog and the owners.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import NamedTuple

import asyncpg

from storage.errors import StorageError
from storage.pg.connect import unavailable_as_store_error
from storage.pg.notify import notify
from storage.pg.ownership import ensure_partitions

_ATTEMPTS = 3
_SELECT = "SELECT name, topic_id, partitions, configs::text, internal, replication_factor FROM kc_topics"

_INSERT_TOPICS = """
INSERT INTO kc_topics (name, topic_id, partitions, configs, internal, replication_factor)
SELECT t.name, t.topic_id, t.partitions, t.configs::jsonb, t.internal, t.replication_factor
FROM unnest($1::text[], $2::uuid[], $3::int[], $4::text[], $5::bool[], $6::int2[])
     AS t(name, topic_id, partitions, configs, internal, replication_factor)
ON CONFLICT DO NOTHING
RETURNING name"""

# Partition rows first: an append in flight holds its row FOR SHARE, so the delete waits for it,
# and an append after it finds no row (fenced). A queued transaction marker (txn_markers.py) is queued
# the same way, so none outlives its topic: Kafka drops the markers of a deleted partition.
_DELETE = ("DELETE FROM kc_partitions WHERE topic_id = ANY($1::uuid[])",
           "DELETE FROM kc_txn_markers WHERE topic_id = ANY($1::uuid[])",
           "DELETE FROM kc_batches WHERE topic_id = ANY($1::uuid[])",
           "DELETE FROM kc_blobs WHERE topic_id = ANY($1::uuid[])",
           "DELETE FROM kc_topics WHERE topic_id = ANY($1::uuid[]) AND NOT internal")


class TopicRow(NamedTuple):
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str]
    internal: bool = False
    replication_factor: int = 1


def _row(record: asyncpg.Record) -> TopicRow:
    return TopicRow(record[0], record[1], record[2], json.loads(record[3]), record[4], record[5])


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
            deleted = False
            for statement in _DELETE if removed else ():
                deleted = await conn.execute(statement, list(removed)) != "DELETE 0" or deleted
            stored: dict[str, TopicRow] = {}
            pending = list(added)
            for _ in range(_ATTEMPTS):  # a name found taken but deleted before we read it is tried again
                if not pending:
                    break
                inserted = {r[0] for r in await conn.fetch(_INSERT_TOPICS, *_columns(pending))}
                for topic in pending:
                    if topic.name in inserted:
                        await ensure_partitions(conn, topic.topic_id, topic.partitions)  # NOTIFYs 'partitions'
                        stored[topic.name] = topic
                taken = [t.name for t in pending if t.name not in inserted]
                if taken:
                    winners = await conn.fetch(_SELECT + " WHERE name = ANY($1::text[])", taken)
                    stored.update((r[0], _row(r)) for r in winners)
                pending = [t for t in pending if t.name not in stored]
            else:
                if pending:
                    raise StorageError(f"cannot create topics {[t.name for t in pending]}: their names keep "
                                       "being deleted, or their ids belong to other topics")
            if deleted:
                await notify(conn, "partitions")
            if deleted or any(stored[t.name] is t for t in added):
                await notify(conn, "topics")
    return [stored[t.name] for t in added]


async def grow_topic(pool: asyncpg.Pool, topic_id: uuid.UUID, old: int, new: int) -> bool:
    """The topic's partition count from `old` to `new`, with the new partition rows, in one transaction
    (NOTIFY 'topics' and 'partitions'); False, and nothing changed, unless the topic has `old` partitions."""
    with unavailable_as_store_error("write the topic catalog"):
        async with pool.acquire() as conn, conn.transaction():
            done = await conn.execute("UPDATE kc_topics SET partitions = $3 WHERE topic_id = $1 AND partitions = $2",
                                      topic_id, old, new)
            if done != "UPDATE 1":
                return False
            await ensure_partitions(conn, topic_id, new)  # NOTIFYs 'partitions'
            await notify(conn, "topics")
    return True


async def update_configs(pool: asyncpg.Pool, topic_id: uuid.UUID, configs: dict[str, str]) -> bool:
    """Replace a topic's config overrides (AlterConfigs); NOTIFYs 'topics' so the other nodes
    apply them. False if no such topic is stored (deleted meanwhile)."""
    with unavailable_as_store_error("write the topic catalog"):
        async with pool.acquire() as conn, conn.transaction():
            done = await conn.execute("UPDATE kc_topics SET configs = $2::jsonb WHERE topic_id = $1 AND NOT internal",
                                      topic_id, json.dumps(configs, sort_keys=True))
            if done == "UPDATE 0":
                return False
            await notify(conn, "topics")
    return True


def _columns(rows: Sequence[TopicRow]) -> tuple[list, ...]:
    return ([t.name for t in rows], [t.topic_id for t in rows], [t.partitions for t in rows],
            [json.dumps(t.configs, sort_keys=True) for t in rows], [t.internal for t in rows],
            [t.replication_factor for t in rows])
