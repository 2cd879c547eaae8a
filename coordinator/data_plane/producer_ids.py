"""Producer ids for InitProducerId, unique across restarts.

Kafka hands brokers blocks of 1000 ids from the controller (ProducerIdManager) so
that no id is ever issued twice. Here the block reservation is one small file in
log.dirs, rewritten atomically before any id of a new block is handed out: after a
crash the unused rest of a block is skipped, never reused.
"""

from __future__ import annotations

import json
import os

from coordinator.data_plane.file_catalog_store import write_atomically

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block.json"


class ProducerIdAllocator:
    def __init__(self, log_dir: str | None) -> None:
        self._path = os.path.join(log_dir, FILE_NAME) if log_dir else None
        self._reserved_end = 0
        if self._path and os.path.exists(self._path):
            with open(self._path, "rb") as handle:
                self._reserved_end = int(json.loads(handle.read())["next_block_start"])
        self._next = self._end = self._reserved_end

    def allocate(self) -> int:
        if self._next >= self._end:
            self._end = self._next + BLOCK_SIZE
            if self._path:
                write_atomically(self._path, json.dumps({"next_block_start": self._end}).encode())
        producer_id = self._next
        self._next += 1
        return producer_id
