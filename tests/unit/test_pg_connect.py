"""storage/pg/connect.py with several hosts: the first that can write is used, whatever the others do (refuse, never
answer, are standbys), and no host that can write is "PostgreSQL unavailable" (retriable), never another error."""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg
import pytest

from storage.pg.connect import connect, open_pool, unavailable_as_store_error
from storage.pg.errors import StoreUnavailableError
from tests.support.postgres import PostgresServer, free_port, server_or_skip


def hosts_url(database: str, *ports: int, options: str = "") -> str:
    hosts = ",".join(f"127.0.0.1:{port}" for port in ports)
    return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write{options}"


@contextlib.asynccontextmanager
async def silent_host():
    """A port that accepts connections and never says a word: a frozen (SIGSTOPped) or hung PostgreSQL."""
    accepted: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _reader, writer: accepted.append(writer), "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in accepted:
            writer.close()


@pytest.fixture(scope="module")
def primary_and_standby():
    primary = server_or_skip().start()
    try:
        standby = primary.standby()
        try:
            yield primary, standby
        finally:
            standby.stop()
    finally:
        primary.stop()


async def server_port(connection: asyncpg.Connection) -> int:
    return int(await connection.fetchval("SHOW port"))


async def test_a_refusing_first_host_is_passed_over(postgres_server):
    connection = await connect(hosts_url("postgres", free_port(), postgres_server.port))
    try:
        assert await server_port(connection) == postgres_server.port
    finally:
        await connection.close()


async def test_a_silent_first_host_costs_its_connect_timeout_then_the_next_is_used(postgres_server):
    """asyncpg's own multi-host connect spends its one timeout on the silent host and never tries the next one;
    ours gives each host the URL's connect_timeout, as libpq does."""
    async with silent_host() as port:
        url = hosts_url("postgres", port, postgres_server.port, options="&connect_timeout=2")
        with pytest.raises(TimeoutError):
            await asyncpg.connect(hosts_url("postgres", port, postgres_server.port), timeout=4)
        async with asyncio.timeout(30):
            connection = await connect(url)
        try:
            assert await server_port(connection) == postgres_server.port
        finally:
            await connection.close()


async def test_the_primary_is_picked_wherever_it_is_listed(primary_and_standby):
    primary, standby = primary_and_standby
    for ports in ((standby.port, primary.port), (primary.port, standby.port)):
        connection = await connect(hosts_url("postgres", *ports))
        try:
            assert await server_port(connection) == primary.port
            assert await connection.fetchval("SELECT pg_is_in_recovery()") is False
        finally:
            await connection.close()


async def test_no_host_that_can_write_is_store_unavailable(primary_and_standby):
    """Mid-failover (the primary dead, the standby not promoted yet) the pool cannot open: retriable."""
    _, standby = primary_and_standby
    with pytest.raises(StoreUnavailableError, match="TargetServerAttributeNotMatched"):
        await open_pool(hosts_url("postgres", free_port(), standby.port))


async def test_a_write_that_reaches_a_standby_is_store_unavailable(primary_and_standby):
    """One address that points at a standby (a moved address, target_session_attrs unset): its writes fail
    as "unavailable" (retriable), as a failover under way is."""
    _, standby = primary_and_standby
    connection = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{standby.port}/postgres")
    try:
        with pytest.raises(StoreUnavailableError, match="ReadOnlySQLTransactionError"):
            with unavailable_as_store_error("write"):
                await connection.execute("CREATE TABLE t (x int)")
    finally:
        await connection.close()


def test_a_standby_follows_its_primary_synchronously_and_takes_over_when_promoted():
    """tests/support/postgres.py's standby: what the primary committed is there; killed, the primary refuses
    connections at once; promoted, the standby writes."""
    primary = server_or_skip().start()
    standby: PostgresServer | None = None
    try:
        standby = primary.standby()
        primary.sql("CREATE TABLE t (x int)")
        primary.sql("INSERT INTO t VALUES (1)")
        assert standby.sql("SELECT pg_is_in_recovery()").strip() == "t"
        primary.kill()
        with pytest.raises(RuntimeError):
            primary.sql("SELECT 1")
        standby.promote()
        standby.sql("INSERT INTO t VALUES (2)")
        assert standby.sql("SELECT string_agg(x::text, ',' ORDER BY x) FROM t").strip() == "1,2"
    finally:
        if standby is not None:
            standby.stop()
        primary.stop()
