"""queued.max.request.bytes (coordinator/net/request_memory.py) with fake transports: what all connections hold of
their requests is counted; a frame begun is reserved to its end and read through; once the pool is used up a
connection that needs more stops reading and is resumed when memory comes back; a connection holding less than the
allowance is always read; a closed connection gives everything back."""

from __future__ import annotations

import asyncio
import math
import struct

import pytest

from coordinator.config import Config, ConfigError
from coordinator.net.connection import Connection
from coordinator.net.request_memory import ALLOWANCE
from protocol.framing import frame
from tests.support.connection import FakeDispatcher, FakeTransport, answer, make_connection

BIG = 150_000  # a frame the allowance does not cover
LIMITS = {"queued.max.request.bytes": "200000", "socket.request.max.bytes": "200000", "queued.max.requests": "10"}


class ShortTags(FakeDispatcher):
    """FakeDispatcher that reads a frame's tag from its first bytes only (big frames are padded with zeros)."""

    def dispatch(self, data: bytes, host: str, port: int, session: object = None):
        return super().dispatch(data[:8].rstrip(b"\0"), host, port)


def big(tag: bytes) -> bytes:
    return frame(tag.ljust(BIG, b"\0"))


def pool_of(count: int) -> list[tuple[Connection, FakeTransport]]:
    first, transport, _ = make_connection(**LIMITS)
    server = first.server
    server.dispatcher = first.dispatcher = ShortTags()
    out = [(first, transport)]
    for _ in range(count - 1):
        connection, other = Connection(server), FakeTransport()
        connection.connection_made(other)
        out.append((connection, other))
    return out


async def test_a_frame_begun_is_reserved_and_the_ones_past_the_pool_wait_for_memory():
    (a, a_out), (b, b_out), (c, c_out), (d, d_out) = pool_of(4)
    memory = a.memory
    a_frame, b_frame, c_frame = big(b"Da"), big(b"Db"), big(b"Sc")
    a.data_received(a_frame[:1000])
    assert memory.used == BIG + 4 and not a_out.paused  # reserved to its end on its first bytes
    b.data_received(b_frame[:1000])
    assert memory.used == 2 * (BIG + 4) and not b_out.paused  # granted while anything was left (Kafka's non-strict)
    c.data_received(c_frame[:1000])
    assert c_out.paused and memory.used == 2 * (BIG + 4) + 1000  # refused: what it holds is counted, it waits
    d.data_received(frame(b"Sd"))  # holding nothing: read and answered
    d.data_received(frame(b"Se" + b"\0" * 100)[:50])  # a small frame begun: within the allowance
    assert d_out.hosts() == ["d"] and not d_out.paused
    a.data_received(a_frame[1000:])  # a reserved frame is read to its end though the pool is used up
    assert a.dispatcher.seen[-1] == "a" and a.pending_bytes == BIG  # deferred: its bytes stay counted, and
    assert a_out.paused and c_out.paused and memory.used >= memory.limit  # past the allowance, it reads no more
    b.connection_lost(None)  # gives its reservation back: the first to wait takes it and reads again
    await asyncio.sleep(0)
    assert not c_out.paused and a_out.paused and memory.used >= memory.limit
    c.data_received(c_frame[1000:])
    assert c_out.hosts() == ["c"]  # answered: its bytes are given back, and the next waiting one reads again
    await asyncio.sleep(0)
    assert not a_out.paused and memory.used < memory.limit
    a.dispatcher.futures["a"].set_result(answer("a"))
    await asyncio.sleep(0)
    assert a_out.hosts() == ["a"]
    d.connection_lost(None)
    for connection in (a, c):
        connection.connection_lost(None)
    assert memory.used == 0 and not memory.waiting


async def test_a_connection_holding_more_than_the_allowance_stops_reading_while_the_pool_is_used_up():
    (hog, _), (heavy, heavy_out), (light, light_out) = pool_of(3)
    memory = hog.memory
    hog.data_received(big(b"Sh")[:1000])
    assert memory.used == BIG + 4
    heavy.data_received(frame(b"D1".ljust(ALLOWANCE, b"\0")) + frame(b"D2"))  # both read: memory was left
    assert heavy.pending_bytes > ALLOWANCE and memory.used >= memory.limit
    assert heavy_out.paused  # over its allowance while the pool is used up: no more until memory comes back
    light.data_received(frame(b"D3"))  # holding little: read
    assert not light_out.paused and light.dispatcher.seen[-1] == "3"
    hog.connection_lost(None)
    await asyncio.sleep(0)
    assert not heavy_out.paused


def test_the_setting_follows_kafkas_rules():
    assert Config.load(environ={}).queued_max_request_bytes == 512 << 20
    with pytest.raises(ConfigError, match="socket.request.max.bytes"):
        Config.load(overrides={"queued.max.request.bytes": "1000"}, environ={})
    for unbounded in ("-1", "0"):
        config = Config.load(overrides={"queued.max.request.bytes": unbounded}, environ={})
        assert config.queued_max_request_bytes == int(unbounded)


async def test_no_bound_when_it_is_not_positive():
    connection, transport, _ = make_connection(**{"queued.max.request.bytes": "-1"})
    assert connection.memory.limit == math.inf
    connection.data_received(struct.pack(">i", 50_000_000) + b"\0" * 10)
    assert not transport.paused and connection.memory.used == 50_000_004
