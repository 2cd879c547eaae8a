"""The bound on request bytes held across all connections: Kafka's `queued.max.request.bytes` (its MemoryPool).

Each connection has its own bounds (net/connection.py), but they add up: 30 connections each sending a 100 MB frame
took the server past 2.4 GB and into MemoryErrors under a 3 GiB limit. The pool counts what every connection holds
of its requests: the bytes in its receive buffer, the rest of a frame it has begun (reserved when the frame's size
is read, so that a frame once begun can always be read to its end: no connection waits for memory that only its
own frame would free), and the requests whose answers are outstanding (an acks=-1 Produce's data waiting for the
disk). As Kafka's pool (non-strict, SimpleMemoryPool), a frame is granted while anything is left, so the pool may be
passed by one frame; once it is used up, a connection that needs more stops reading until memory is given back, and
the waiting ones are then resumed in the order they stopped (Kafka unmutes them when the pool is no longer empty).

Unlike Kafka's, each connection has an allowance of ALLOWANCE bytes that the pool never refuses: a consumer's
heartbeats and commits, a watchdog's ApiVersions, keep being read while others hold the memory (in Kafka every
muted channel waits, heartbeats too). What may pass the limit is thus one frame plus, per connection, the allowance
and what one read brings (up to 256 KiB). `queued.max.request.bytes` <= 0 means no bound, as in Kafka.
"""

from __future__ import annotations

import asyncio
import math
from typing import Protocol

import structlog

log = structlog.get_logger(__name__)

#: What a connection may hold of requests whatever the pool has left.
ALLOWANCE = 65536


class Connection(Protocol):
    """What the pool reads and sets of a connection (net/connection.py's)."""

    buffer: bytearray
    buffer_charge: int  # what the pool counts for the buffer
    pending_bytes: int
    max_frame: int

    def memory_freed(self) -> None: ...


class RequestMemory:
    __slots__ = ("limit", "used", "waiting", "loop", "wake_scheduled", "exhausted")

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        self.limit: float = limit if limit > 0 else math.inf
        self.used = 0
        self.waiting: dict[Connection, None] = {}  # connections that stopped reading for memory, in order
        self.loop = loop
        self.wake_scheduled = False
        self.exhausted = False  # logged once per spell

    def give(self, size: int) -> None:
        self.used -= size
        if self.waiting and self.used < self.limit and not self.wake_scheduled:
            self.wake_scheduled = True
            self.loop.call_soon(self._wake)

    def blocks(self, connection: Connection) -> bool:
        """Charge the pool for what `connection` buffers, and whether it must stop reading for memory (it is then
        resumed by a later `give`)."""
        buffer = connection.buffer
        held = len(buffer)
        need = held
        if held >= 4:
            size = int.from_bytes(buffer[:4], "big", signed=True)
            if held < size + 4 <= connection.max_frame + 4:  # a frame begun: reserved to its end (a size out of
                need = size + 4  # bounds is not: it closes the connection once the frame is cut)
        charged = connection.buffer_charge
        if need < charged:
            self.give(charged - need)
            connection.buffer_charge = charged = need
        elif need > charged:
            if self.used < self.limit or connection.pending_bytes + need <= ALLOWANCE:
                self.used += need - charged
                connection.buffer_charge = charged = need
            else:  # the frame waits; what the buffer already holds is counted
                self.used += max(held - charged, 0)
                connection.buffer_charge = max(held, charged)
                return self._wait(connection)
        if self.used < self.limit or need > held:  # memory left, or a reserved frame still to read
            return False
        if connection.pending_bytes + charged <= ALLOWANCE:
            return False
        return self._wait(connection)

    def _wait(self, connection: Connection) -> bool:
        if not self.exhausted:
            self.exhausted = True
            log.warning("request memory exhausted", used=self.used, limit=self.limit,
                        reason="connections stop reading until requests are answered (queued.max.request.bytes)")
        self.waiting[connection] = None
        return True

    def _wake(self) -> None:
        self.wake_scheduled = False
        if self.used >= self.limit:
            return
        self.exhausted = False
        waiting, self.waiting = self.waiting, {}
        for connection in waiting:
            connection.memory_freed()
