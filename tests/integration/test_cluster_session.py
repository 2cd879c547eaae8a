"""coordinator/cluster/session.py: the node's session on a real PostgreSQL, reached through a relay that can freeze
(tests/support/tcp_relay.py) as a SIGSTOPped server does: its connection stays open and unanswered."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.cluster import session as session_module
from coordinator.cluster.session import MIN_ANSWER_S, NodeSession, answer_within_s
from storage.pg import connect as connect_module
from storage.pg.connect import ConnectionSet
from tests.support.tcp_relay import Relay


@pytest.fixture
async def relay(postgres_server):
    made = await Relay(postgres_server.port).start()
    yield made
    await made.aclose()
    connect_module._UNANSWERED.clear()  # (the relay's port, remembered as silent)


def test_postgresql_has_a_third_of_the_session_timeout_to_answer():
    assert answer_within_s(9000) == 3.0
    assert answer_within_s(1500) == MIN_ANSWER_S


def session_over(relay: Relay, unanswered: list) -> NodeSession:
    connections = ConnectionSet(f"postgresql://postgres@127.0.0.1:{relay.port}/postgres")
    return NodeSession(connections.connect, lambda *args: None, answer_within_s=0.5, unanswered=unanswered.append)


async def test_a_frozen_postgresql_ends_the_session_without_a_word_sent_to_it(relay):
    unanswered: list = []
    session = session_over(relay, unanswered)
    await session.open()
    connection = session._connection
    relay.freeze()
    accepted = relay.accepted
    async with asyncio.timeout(session_module.PROBE_EVERY_S + 0.5 + 5):  # (generous: a liveness bound)
        await session.until_closed()
    assert unanswered == [connection] and connection.is_closed() and session.key is None
    assert relay.accepted == accepted  # no cancel request


async def test_a_session_that_answers_stays_open(relay, monkeypatch):
    monkeypatch.setattr(session_module, "PROBE_EVERY_S", 0.02)
    unanswered: list = []
    session = session_over(relay, unanswered)
    await session.open()
    probed = 0
    original = session._answers

    async def counted(connection):
        nonlocal probed
        probed += 1
        return await original(connection)

    monkeypatch.setattr(session, "_answers", counted)
    watching = asyncio.create_task(session.until_closed())
    try:
        while probed < 20:
            await asyncio.sleep(0.02)
            assert not watching.done()
        assert session.is_open() and not unanswered
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
        await session.close()


async def test_a_postgresql_that_freezes_while_the_session_opens_fails_the_open(relay):
    unanswered: list = []
    connections = ConnectionSet(f"postgresql://postgres@127.0.0.1:{relay.port}/postgres")

    async def connect_then_freeze():
        connection = await connections.connect()
        relay.freeze()
        return connection

    session = NodeSession(connect_then_freeze, lambda *args: None, answer_within_s=0.5,
                          unanswered=unanswered.append)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(10):
            await session.open()
    assert len(unanswered) == 1 and unanswered[0].is_closed() and not session.is_open()
