"""storage/pg/connect.py with several hosts: the first that can write is used, whatever the others do (refuse, never
answer, are standbys), a host that did not answer is tried last until it answers again, and no host that can write
is "PostgreSQL unavailable" (retriable), never another error. Every TCP socket gets libpq's keepalive settings and
tcp_user_timeout; a ConnectionSet ends all of its connections at once."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

import asyncpg
import pytest
import uvloop

from storage.pg import connect as connect_module
from storage.pg.connect import ConnectionSet, connect, open_pool, unavailable_as_store_error
from storage.pg.errors import StoreUnavailableError
from tests.support.postgres import PostgresServer, free_port, server_or_skip
from tests.support.tcp_relay import Relay


@pytest.fixture(autouse=True)
def no_host_remembered():
    """Each test starts with no host remembered as silent (they are remembered per process)."""
    connect_module._UNANSWERED.clear()
    yield
    connect_module._UNANSWERED.clear()


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


def tcp_settings(connection: asyncpg.Connection) -> tuple[int, int, int, int, int]:
    sock = connection._transport.get_extra_info("socket")
    return (sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
            *(sock.getsockopt(socket.IPPROTO_TCP, option)
              for option in (socket.TCP_KEEPIDLE, socket.TCP_KEEPINTVL, socket.TCP_KEEPCNT, socket.TCP_USER_TIMEOUT)))


def system_keepalive() -> tuple[int, int, int]:
    return tuple(int(Path(f"/proc/sys/net/ipv4/tcp_keepalive_{name}").read_text())  # type: ignore[return-value]
                 for name in ("time", "intvl", "probes"))


async def settings_of(url: str) -> tuple[int, ...]:
    connection = await connect(url)
    try:
        return tcp_settings(connection)
    finally:
        await connection.close()


async def test_every_tcp_connection_gets_keepalives_and_a_user_timeout(postgres_server):
    """Without them in the URL: ours (url.py); with them: the URL's, 0 leaving the system's default, as libpq."""
    assert await settings_of(postgres_server.url) == (1, 2, 1, 3, 5000)
    several = hosts_url("postgres", free_port(), postgres_server.port)
    assert await settings_of(several + "&keepalives_idle=7&keepalives_interval=3&keepalives_count=4"
                                       "&tcp_user_timeout=9000") == (1, 7, 3, 4, 9000)
    assert await settings_of(postgres_server.url + "?keepalives_idle=0&keepalives_interval=0&keepalives_count=0"
                                                   "&tcp_user_timeout=0") == (1, *system_keepalive(), 0)
    assert (await settings_of(postgres_server.url + "?keepalives=0"))[0] == 0


async def test_a_pool_opened_through_a_connection_set_sets_them_too(postgres_server):
    connections = ConnectionSet(postgres_server.url + "?tcp_user_timeout=4000")
    pool = await open_pool(connections.url, connections=connections, max_size=2)
    try:
        async with pool.acquire() as connection:
            assert tcp_settings(connection._con)[4] == 4000
    finally:
        await pool.close()


def test_the_settings_reach_the_socket_under_uvloop_too(postgres_server):
    """The node runs on uvloop, whose transports give a socket of their own kind."""
    assert uvloop.run(settings_of(postgres_server.url + "?keepalives_idle=9")) == (1, 9, 1, 3, 5000)


async def test_a_unix_socket_is_left_alone(postgres_server):
    connection = await connect(f"postgresql://postgres@/postgres?host={postgres_server.dir}&port={postgres_server.port}"
                               "&tcp_user_timeout=3000")
    try:
        assert connection._transport.get_extra_info("socket").family == socket.AF_UNIX
        assert await connection.fetchval("SELECT 1") == 1
    finally:
        await connection.close()


async def test_a_host_that_ran_out_its_connect_timeout_is_tried_last_until_it_answers(postgres_server):
    """After a failover only the first connection waits for the silent old primary, not every one after it."""
    first, second = Relay(postgres_server.port), Relay(postgres_server.port)
    await first.start()
    await second.start()
    try:
        url = hosts_url("postgres", first.port, second.port, options="&connect_timeout=2")
        first.silent = True
        for _ in range(2):
            connection = await connect(url)
            await connection.close()
        assert (first.accepted, second.accepted) == (1, 2)  # waited on once, then tried after the other
        first.thaw()
        await second.close()  # refuses: the silent host is tried after all, answers, and is first again
        await (await connect(url)).close()
        await second.start()
        await (await connect(url)).close()
        assert (first.accepted, second.accepted) == (3, 2)
    finally:
        await first.aclose()
        await second.aclose()


async def test_abandon_ends_every_connection_at_once_without_a_word_to_the_silent_server(postgres_server):
    """A statement in flight on a frozen server fails at once as "unavailable", no cancel request is sent to it,
    the pool opens new connections, and the silent host is tried last from then on."""
    relay = await Relay(postgres_server.port).start()
    try:
        connections = ConnectionSet(hosts_url("postgres", relay.port, postgres_server.port))
        pool = await open_pool(connections.url, connections=connections, max_size=2)
        session = await connections.connect()
        relay.freeze()
        stuck = asyncio.ensure_future(pool.fetchval("SELECT 1"))
        probe = asyncio.ensure_future(session.fetchval("SELECT 1"))
        done, _ = await asyncio.wait([stuck, probe], timeout=0.5)
        assert not done  # the frozen server answers neither
        accepted = relay.accepted
        connections.abandon(session)
        with pytest.raises(StoreUnavailableError, match="ConnectionDoesNotExistError"):
            async with asyncio.timeout(2):
                with unavailable_as_store_error("a statement in flight"):
                    await stuck
        with pytest.raises(asyncpg.exceptions.ConnectionDoesNotExistError):
            await probe
        assert session.is_closed()
        async with pool.acquire() as connection:  # a new one, on the next host
            assert await server_port(connection) == postgres_server.port
        assert relay.accepted == accepted
    finally:
        await pool.close()
        await relay.aclose()


async def test_a_connect_under_way_to_a_host_found_silent_moves_on_at_once(postgres_server):
    """A connect that started on the old primary just before the node noticed it froze (the pool opening one more
    connection, say) does not wait out its connect timeout there once `abandon` finds the host silent: it tries the
    next host at once (it waited 10 s, the default, keeping a node's partitions unowned after a failover)."""
    relay = await Relay(postgres_server.port).start()
    try:
        connections = ConnectionSet(hosts_url("postgres", relay.port, postgres_server.port,
                                              options="&connect_timeout=30"))
        session = await connections.connect()
        assert await server_port(session) == postgres_server.port  # through the relay: it is the first host
        relay.freeze()
        started = asyncio.get_running_loop().time()
        late = asyncio.ensure_future(connections.connect())  # reaches the frozen host, which never answers
        done, _ = await asyncio.wait([late], timeout=0.5)
        assert not done
        connections.abandon(session)
        async with asyncio.timeout(5):
            connection = await late
        try:
            assert asyncio.get_running_loop().time() - started < 5  # not the 30 s connect timeout
            assert await server_port(connection) == postgres_server.port
        finally:
            await connection.close()
    finally:
        await relay.aclose()


async def test_a_host_found_silent_twice_before_its_connects_ran_again_is_no_error(postgres_server):
    """Two connects under way to the silent host, the host marked twice in one turn (abandon, then a connect's own
    timeout): the second marking finds the deadlines expiring already and leaves them, and both connects go on to
    the next host."""
    relay = await Relay(postgres_server.port).start()
    try:
        connections = ConnectionSet(hosts_url("postgres", relay.port, postgres_server.port,
                                              options="&connect_timeout=30"))
        session = await connections.connect()
        relay.freeze()
        late = [asyncio.ensure_future(connections.connect()) for _ in range(2)]
        done, _ = await asyncio.wait(late, timeout=0.5)
        assert not done
        connections.abandon(session)
        connect_module._mark_unanswered(connect_module.parse(connections.url).hosts[0])  # again, same turn
        async with asyncio.timeout(5):
            opened = await asyncio.gather(*late)
        try:
            assert [await server_port(c) for c in opened] == [postgres_server.port] * 2
        finally:
            for connection in opened:
                await connection.close()
    finally:
        await relay.aclose()
