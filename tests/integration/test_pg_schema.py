"""storage/pg/schema.py and connect.py against a real PostgreSQL (tests/support/postgres.py)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from storage.pg.connect import open_pool, redact, unavailable_as_store_error
from storage.pg.errors import SchemaTooNewError, StoreUnavailableError
from storage.pg.schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from tests.support.postgres import free_port

TABLES = {"kc_schema", "kc_cluster", "kc_nodes", "kc_topics", "kc_partitions", "kc_batches", "kc_producer_ids",
          "kc_blobs", "kc_broker_configs", "kc_scram_credentials", "kc_acls", "kc_txn_markers",
          "kc_group_configs", "kc_share_state_bodies"}  # fmt: skip


async def _tables(conn: asyncpg.Connection) -> set[str]:
    rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {row["tablename"] for row in rows}


async def test_migrate_creates_every_table_at_the_current_version(pg_url):
    conn = await asyncpg.connect(pg_url)
    try:
        assert await schema_version(conn) == 0
        assert await migrate(conn) == 0
        assert await schema_version(conn) == SCHEMA_VERSION == 7
        assert await _tables(conn) == TABLES
        assert await conn.fetch("SELECT id, next_block FROM kc_producer_ids") == [(1, 0)]
    finally:
        await conn.close()


async def test_migrate_twice_is_a_no_op(pg_url):
    conn = await asyncpg.connect(pg_url)
    try:
        await migrate(conn)
        await conn.execute("INSERT INTO kc_cluster VALUES ('cluster.id', 'abc')")
        assert await migrate(conn) == SCHEMA_VERSION
        assert await conn.fetchval("SELECT count(*) FROM kc_schema") == 1
        assert await conn.fetch("SELECT * FROM kc_cluster") == [("cluster.id", "abc")]
        assert await conn.fetchval("SELECT count(*) FROM kc_producer_ids") == 1
    finally:
        await conn.close()


async def test_a_newer_schema_stops_migrate_and_open_pool(pg_url):
    conn = await asyncpg.connect(pg_url)
    try:
        await migrate(conn)
        await conn.execute("UPDATE kc_schema SET version = $1", SCHEMA_VERSION + 1)
        with pytest.raises(SchemaTooNewError) as raised:
            await migrate(conn)
        assert (raised.value.database_version, raised.value.code_version) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
        assert await schema_version(conn) == SCHEMA_VERSION + 1
    finally:
        await conn.close()
    with pytest.raises(SchemaTooNewError):
        await open_pool(pg_url)


async def test_a_version_1_database_is_migrated_keeping_its_rows(pg_url):
    conn = await asyncpg.connect(pg_url)
    try:
        for statement in dict(MIGRATIONS)[1]:
            await conn.execute(statement)
        await conn.execute("UPDATE kc_schema SET version = 1")
        await conn.execute("INSERT INTO kc_nodes VALUES (1, gen_random_uuid(), '[]', NULL, now())")
        await conn.execute("INSERT INTO kc_topics (name, topic_id, partitions) VALUES ('t', gen_random_uuid(), 3)")
        assert await migrate(conn) == 1
        assert await schema_version(conn) == SCHEMA_VERSION
        # a node of version 1 holds no session lock: NULL, so its lease alone says whether it lives
        assert await conn.fetch("SELECT node_id, session_key FROM kc_nodes") == [(1, None)]
        # a topic created before replication factors were kept: 1, what it was created with
        assert await conn.fetch("SELECT name, replication_factor FROM kc_topics") == [("t", 1)]
    finally:
        await conn.close()


async def test_concurrent_migrations_run_once(pg_url):
    conns = [await asyncpg.connect(pg_url) for _ in range(3)]
    try:
        found = await asyncio.gather(*(migrate(conn) for conn in conns))
        assert sorted(found) == [0, SCHEMA_VERSION, SCHEMA_VERSION]
        assert await _tables(conns[0]) == TABLES
    finally:
        for conn in conns:
            await conn.close()


async def test_open_pool_migrates(pg_url):
    pool = await open_pool(pg_url, max_size=2)
    try:
        async with pool.acquire() as conn:
            assert await schema_version(conn) == SCHEMA_VERSION
    finally:
        await pool.close()


async def test_open_pool_unreachable_is_store_unavailable_without_the_password():
    url = f"postgresql://kc:s3cret@127.0.0.1:{free_port()}/kc"
    with pytest.raises(StoreUnavailableError) as raised:
        await open_pool(url)
    assert "s3cret" not in str(raised.value)
    assert f"kc:***@127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}/kc" in str(raised.value)


async def test_a_lost_connection_is_store_unavailable(pg_url):
    conn = await asyncpg.connect(pg_url)
    admin = await asyncpg.connect(pg_url)
    try:
        # with a timeout, pg_terminate_backend returns once the backend has exited: without one it only signals
        # it, and the next query could still be answered (this test failed that way under load)
        assert await admin.fetchval("SELECT pg_terminate_backend($1, 10000)", conn.get_server_pid())
        with pytest.raises(StoreUnavailableError):
            with unavailable_as_store_error("select"):
                await conn.fetchval("SELECT 1")
    finally:
        await conn.close()
        await admin.close()


def test_unavailable_as_store_error_lets_other_errors_through():
    with pytest.raises(ZeroDivisionError):
        with unavailable_as_store_error("x"):
            raise ZeroDivisionError


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://kc:pw@db:5432/kc", "postgresql://kc:***@db:5432/kc"),
        ("postgresql://kc:pw@db/kc?sslmode=require", "postgresql://kc:***@db/kc?sslmode=require"),
        ("postgresql://kc@db/kc?password=pw&sslmode=require", "postgresql://kc@db/kc?password=***&sslmode=require"),
        ("postgresql://kc:p%40w@[::1]:5432/kc", "postgresql://kc:***@[::1]:5432/kc"),
        ("postgresql://db/kc", "postgresql://db/kc"),
    ],
)
def test_redact_hides_the_password(url, shown):
    assert redact(url) == shown
