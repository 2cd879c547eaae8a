"""Producer ids for InitProducerId, unique across restarts (and, in cluster mode, nodes).

Kafka hands brokers blocks of 1000 ids from the controller (ProducerIdManager) so
that no id is ever issued twice. Here a block is reserved before any of its ids is
handed out: in local mode in one small file in log.dirs, rewritten atomically (on the
loop: once per 1000 ids); in cluster mode by PostgreSQL (`reserve_block`, awaited), shared
by every node. After a crash the unused rest of a block is skipped, never reused.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable

from coordinator.data_plane.file_catalog_store import write_atomically
from coordinator.errors import ProducerIdsUnavailable

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block.json"

#: Reserves `size` ids for this node: returns the first (cluster mode's PostgreSQL block).
ReserveBlock = Callable[[int], Awaitable[int]]


class ProducerIdAllocator:
    def __init__(self, log_dir: str | None, reserve_block: ReserveBlock | None = None) -> None:
        self._path = os.path.join(log_dir, FILE_NAME) if log_dir and reserve_block is None else None
        self._reserve_block = reserve_block
        self._reserving = asyncio.Lock()
        self._reserved_end = 0
        if self._path and os.path.exists(self._path):
            with open(self._path, "rb") as handle:
                self._reserved_end = int(json.loads(handle.read())["next_block_start"])
        self._next = self._end = self._reserved_end

    def take(self) -> int | None:
        """The next id now; None when the block is used up and the next one must be awaited
        (`allocate`: cluster mode only)."""
        if self._next >= self._end:
            if self._reserve_block is not None:
                return None
            self._end = self._next + BLOCK_SIZE
            if self._path:
                write_atomically(self._path, json.dumps({"next_block_start": self._end}).encode())
        producer_id = self._next
        self._next += 1
        return producer_id

    async def ensure_available(self) -> None:
        """Make sure the next `take()` returns an id (reserving a block first if needed), so a synchronous
        decision (the transaction coordinator's InitProducerId) can take one only if it needs one."""
        producer_id = await self.allocate()
        self._next = producer_id  # give it back: the block is reserved, the id unused

    async def allocate(self) -> int:
        """The next id, reserving a new block first when needed (one reservation at a time).
        Raises ProducerIdsUnavailable (retriable) when the block cannot be reserved."""
        producer_id = self.take()
        while producer_id is None:
            assert self._reserve_block is not None
            async with self._reserving:
                if self._next >= self._end:
                    try:
                        start = await self._reserve_block(BLOCK_SIZE)
                    except Exception as exc:
                        raise ProducerIdsUnavailable(f"Producer ID block is full. Waiting for next block: {exc}") \
                            from exc
                    self._next, self._end = start, start + BLOCK_SIZE
            producer_id = self.take()
        return producer_id
