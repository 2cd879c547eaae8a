"""A Connection wired to a fake transport and dispatcher: no sockets, no sleeps."""

from __future__ import annotations

import asyncio
import struct

from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v0.response import FindCoordinatorResponse

from coordinator.config import Config
from coordinator.net.connection import Connection
from coordinator.net.dispatch import CloseConnection, Deferred
from coordinator.net.server import Server
from protocol.codec import encode_response
from tests.support.data_plane import Plane


def answer(tag: str) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(error_code=ErrorCode.none, node_id=1, host=tag, port=1)


class FakeDispatcher:
    """Frames are b"S<tag>" (answered at once), b"D<tag>" (deferred) or b"X" (violation)."""

    def __init__(self) -> None:
        self.futures: dict[str, asyncio.Future] = {}
        self.seen: list[str] = []

    def dispatch(self, data: bytes, host: str, port: int, session: object = None):
        tag = data[1:].decode()
        self.seen.append(tag)
        if data[:1] == b"S":
            return encode_response(len(self.seen), 0, answer(tag))
        if data[:1] == b"D":
            future = asyncio.get_running_loop().create_future()
            self.futures[tag] = future
            return Deferred(future, len(self.seen), 0, "test")
        raise CloseConnection("bad frame")


class FakeTransport:
    def __init__(self) -> None:
        self.written = bytearray()
        self.paused = False
        self.closed = False

    def get_extra_info(self, name):
        return ("127.0.0.1", 40000) if name == "peername" else None

    def set_write_buffer_limits(self, high, low):
        pass

    def write(self, data):
        self.written += data

    def pause_reading(self):
        self.paused = True

    def resume_reading(self):
        self.paused = False

    def close(self):
        self.closed = True

    def abort(self):
        self.closed = True

    def hosts(self) -> list[str]:
        out, data = [], bytes(self.written)
        while data:
            size = struct.unpack_from(">i", data)[0]
            body = data[4:4 + size]
            (length,) = struct.unpack_from(">h", body, 10)  # corr(4) error(2) node(4) host
            out.append(body[12:12 + length].decode())
            data = data[4 + size:]
        return out


def make_connection(**overrides: str):
    loop = asyncio.get_running_loop()
    config = Config.load(overrides={"queued.max.requests": "2", **overrides}, environ={})
    dispatcher = FakeDispatcher()
    server = Server(config, dispatcher, loop)  # type: ignore[arg-type]
    connection = Connection(server)
    transport = FakeTransport()
    connection.connection_made(transport)
    return connection, transport, dispatcher


def connect(plane: Plane) -> tuple[Connection, FakeTransport]:
    """A Connection to the plane's real dispatcher over a fake transport."""
    connection = Connection(Server(plane.config, plane.dispatcher, asyncio.get_running_loop()))
    transport = FakeTransport()
    connection.connection_made(transport)
    return connection, transport


async def settle(condition, rounds: int = 200) -> None:
    for _ in range(rounds):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")
