"""The http.listener's connection guard (coordinator/ops/http_guard.py) with a fake transport and protocol: counted
before aiohttp sees a connection, refused over a limit, given back on close, dropped when its answer stays unread."""

from __future__ import annotations

import asyncio

from coordinator.config import Config
from coordinator.net.connection_quotas import ConnectionQuotas, connection_cap
from coordinator.ops.http_guard import GuardedConnection


class Transport:
    def __init__(self, host: str) -> None:
        self.host = host
        self.aborted = False

    def get_extra_info(self, name):
        return (self.host, 40000) if name == "peername" else None

    def abort(self):
        self.aborted = True


class Inner(asyncio.Protocol):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def connection_made(self, transport):
        self.calls.append("made")

    def data_received(self, data):
        self.calls.append(data.decode())

    def pause_writing(self):
        self.calls.append("pause")

    def resume_writing(self):
        self.calls.append("resume")

    def connection_lost(self, exc):
        self.calls.append("lost")


def guarded(quotas: ConnectionQuotas, made: list[Inner], idle: float = 30.0) -> GuardedConnection:
    def make() -> Inner:
        made.append(Inner())
        return made[-1]

    return GuardedConnection(quotas, make, idle)


def test_a_connection_over_a_limit_is_closed_before_aiohttp_sees_it():
    quotas = ConnectionQuotas(2, 1, {}, listener="http", total_setting="http.max.connections")
    made: list[Inner] = []
    first, second = guarded(quotas, made), guarded(quotas, made)
    first.connection_made(Transport("10.0.0.1"))
    refused = Transport("10.0.0.1")
    second.connection_made(refused)
    assert refused.aborted and len(made) == 1 and quotas.counts == {"10.0.0.1": 1}
    second.data_received(b"GET")
    second.connection_lost(None)  # never counted: nothing given back
    first.data_received(b"GET / HTTP/1.1\r\n")
    assert made[0].calls == ["made", "GET / HTTP/1.1\r\n"]
    first.connection_lost(None)
    assert made[0].calls[-1] == "lost" and quotas.total == 0 and quotas.counts == {}


async def test_an_answer_left_unread_for_the_idle_time_closes_the_connection():
    quotas = ConnectionQuotas(10, 10, {})
    made: list[Inner] = []
    reader, stalled = guarded(quotas, made, idle=0.05), guarded(quotas, made, idle=0.05)
    reading, full = Transport("10.0.0.1"), Transport("10.0.0.2")
    reader.connection_made(reading)
    stalled.connection_made(full)
    reader.pause_writing()
    stalled.pause_writing()
    reader.resume_writing()  # this one reads its answer
    await asyncio.sleep(0.1)
    assert full.aborted and not reading.aborted
    assert made[0].calls == ["made", "pause", "resume"] and made[1].calls == ["made", "pause"]


def test_the_http_connections_are_kept_out_of_the_kafka_listeners_fds():
    assert connection_cap(2**31 - 1, nofile=1024, others=64) == 1024 - 256 - 64
    config = Config.load(overrides={"http.listener": "http://127.0.0.1:0", "http.max.connections": "8",
                                    "max.connections.per.ip": "3"}, environ={})
    http = ConnectionQuotas.for_http(config)
    assert (http.max_connections, http.per_ip, http.log_fields) == (8, 3, {"listener": "http"})
    assert Config.load(environ={}).http_max_connections == 64
    assert Config.load(environ={}).http_connections_max_idle_ms == 30000
