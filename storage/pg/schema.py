"""The versioned schema of the PostgreSQL store, migrated at every start.

MIGRATIONS is a list of (version, statements): version N's statements take the schema from N-1
to N. `migrate` runs under a transaction-scoped advisory lock, so nodes starting together migrate
once; a database whose version is newer than SCHEMA_VERSION stops start-up (SchemaTooNewError).
"""

from __future__ import annotations

from contextlib import nullcontext

import asyncpg

from storage.pg.errors import SchemaTooNewError

SCHEMA_VERSION = 7

# pg_advisory_xact_lock key of migrations: any fixed bigint; this one spells "kcschema" in ASCII.
MIGRATION_LOCK = 0x6B63736368656D61

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            "CREATE TABLE kc_schema (version int NOT NULL)",
            "INSERT INTO kc_schema (version) VALUES (0)",
            "CREATE TABLE kc_cluster (name text PRIMARY KEY, value text NOT NULL)",
            """CREATE TABLE kc_nodes (node_id int PRIMARY KEY, incarnation uuid NOT NULL, listeners jsonb NOT NULL,
                                      rack text, expires_at timestamptz NOT NULL)""",
            """CREATE TABLE kc_topics (name text PRIMARY KEY, topic_id uuid NOT NULL UNIQUE, partitions int NOT NULL,
                                       configs jsonb NOT NULL DEFAULT '{}', internal boolean NOT NULL DEFAULT false)""",
            """CREATE TABLE kc_partitions (topic_id uuid NOT NULL, partition int NOT NULL, owner int,
                                           epoch bigint NOT NULL DEFAULT 0, log_start bigint NOT NULL DEFAULT 0,
                                           PRIMARY KEY (topic_id, partition))""",
            """CREATE TABLE kc_batches (topic_id uuid NOT NULL, partition int NOT NULL, base_offset bigint NOT NULL,
                                        last_offset bigint NOT NULL, max_timestamp bigint NOT NULL, data bytea NOT NULL,
                                        PRIMARY KEY (topic_id, partition, base_offset))""",
            "CREATE TABLE kc_producer_ids (id int PRIMARY KEY CHECK (id = 1), next_block bigint NOT NULL)",
            "INSERT INTO kc_producer_ids (id, next_block) VALUES (1, 0)",
            """CREATE TABLE kc_blobs (kind text NOT NULL, topic_id uuid NOT NULL, partition int NOT NULL,
                                      name text NOT NULL, data bytea NOT NULL,
                                      created_at timestamptz NOT NULL DEFAULT now(),
                                      PRIMARY KEY (kind, topic_id, partition, name))""",
        ],
    ),
    (
        2,
        [
            # The key of the session-level advisory lock the node's incarnation holds on its own connection
            # (storage/pg/leases.py); NULL for a node that holds none, whose lease alone says it is alive.
            "ALTER TABLE kc_nodes ADD COLUMN session_key bigint",
        ],
    ),
    (
        3,
        [
            # Dynamic broker configs (IncrementalAlterConfigs on BROKER): level '' is the cluster-wide default,
            # a node id (as text) that node's own.
            """CREATE TABLE kc_broker_configs (level text NOT NULL, name text NOT NULL, value text NOT NULL,
                                               PRIMARY KEY (level, name))""",
        ],
    ),
    (
        4,
        [
            # SCRAM credentials (AlterUserScramCredentials): Kafka's UserScramCredentialRecord, no password.
            """CREATE TABLE kc_scram_credentials (user_name text NOT NULL, mechanism smallint NOT NULL,
                                                  salt bytea NOT NULL, stored_key bytea NOT NULL,
                                                  server_key bytea NOT NULL, iterations int NOT NULL,
                                                  PRIMARY KEY (user_name, mechanism))""",
            # ACLs (CreateAcls/DeleteAcls): Kafka's AccessControlEntryRecord, one row per binding.
            """CREATE TABLE kc_acls (resource_type smallint NOT NULL, name text NOT NULL,
                                     pattern_type smallint NOT NULL, principal text NOT NULL, host text NOT NULL,
                                     operation smallint NOT NULL, permission smallint NOT NULL,
                                     PRIMARY KEY (resource_type, name, pattern_type, principal, host, operation,
                                                  permission))""",
        ],
    ),
    (
        5,
        [
            # Transaction markers queued by a transaction coordinator for a partition another node holds
            # (storage/pg/txn_markers.py): the holder writes each, in id order, and deletes its row once durable.
            """CREATE TABLE kc_txn_markers (id bigserial PRIMARY KEY, topic_id uuid NOT NULL, partition int NOT NULL,
                                            producer_id bigint NOT NULL, producer_epoch smallint NOT NULL,
                                            commit boolean NOT NULL, coordinator_epoch int NOT NULL,
                                            queued_at timestamptz NOT NULL DEFAULT now())""",
            "CREATE INDEX kc_txn_markers_partition ON kc_txn_markers (topic_id, partition, id)",
        ],
    ),
    (
        6,
        [
            # A topic's replication factor as created (CreateTopics): how many live nodes Metadata names as each
            # partition's replicas, at most (coordinator/data_plane/replication.py). Topics from before: 1.
            "ALTER TABLE kc_topics ADD COLUMN replication_factor smallint NOT NULL DEFAULT 1",
        ],
    ),
    (
        7,
        [
            # Group configs (IncrementalAlterConfigs on a GROUP resource: consumer.* and share.*), one row per
            # (group, name), read by every node (storage/pg/group_configs.py).
            """CREATE TABLE kc_group_configs (group_id text NOT NULL, name text NOT NULL, value text NOT NULL,
                                              PRIMARY KEY (group_id, name))""",
            # A share-group state request or answer too long for a notification: its body, which the notification
            # names and the one node it is for takes (storage/pg/share_state_calls.py).
            """CREATE TABLE kc_share_state_bodies (id bigserial PRIMARY KEY, body bytea NOT NULL,
                                                   stored_at timestamptz NOT NULL DEFAULT now())""",
        ],
    ),
]


async def schema_version(conn: asyncpg.Connection) -> int:
    """The database's schema version; 0 for a database never migrated."""
    if await conn.fetchval("SELECT to_regclass('kc_schema')") is None:
        return 0
    return await conn.fetchval("SELECT version FROM kc_schema")


async def migrate(pool: asyncpg.Pool | asyncpg.Connection) -> int:
    """Create or upgrade the schema to SCHEMA_VERSION, step by step, in one transaction; returns the
    version found before. Safe when several nodes call it at once (they wait on one advisory lock)."""
    async with pool.acquire() if isinstance(pool, asyncpg.Pool) else nullcontext(pool) as conn:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            found = await schema_version(conn)
            if found > SCHEMA_VERSION:
                raise SchemaTooNewError(found, SCHEMA_VERSION)
            for version, statements in MIGRATIONS:
                if version > found:
                    for statement in statements:
                        await conn.execute(statement)
                    await conn.execute("UPDATE kc_schema SET version = $1", version)
            return found
