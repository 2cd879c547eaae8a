"""The local mode's catalog store: `<log.dirs>/topic-catalog.json`.

A batch of changes rewrites that file atomically (temp file, fsync, rename, fsync of the
directory) in a worker thread, so a crash leaves either the old or the new catalog, never
a torn one, and the event loop never waits for the disk.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Sequence

from coordinator.data_plane.topic_catalog import TopicInfo

CATALOG_FILE = "topic-catalog.json"


def write_atomically(path: str, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new content."""
    directory = os.path.dirname(path) or "."
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class FileCatalogStore:
    """The user topics as one JSON file; nobody else writes it, so a write never loses a race."""

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, CATALOG_FILE)

    def preload(self) -> list[TopicInfo]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as handle:
            stored = json.loads(handle.read())
        return [TopicInfo(item["name"], uuid.UUID(item["topic_id"]), int(item["partitions"]),
                          configs=tuple(sorted(item.get("configs", {}).items())))
                for item in stored["topics"]]

    async def read(self) -> list[TopicInfo]:
        return await asyncio.get_running_loop().run_in_executor(None, self.preload)

    async def write(self, visible: Sequence[TopicInfo], added: Sequence[TopicInfo],
                    removed: Sequence[TopicInfo]) -> list[TopicInfo]:
        await asyncio.get_running_loop().run_in_executor(None, self._write, self.path, list(visible))
        return list(added)

    async def grow(self, visible: Sequence[TopicInfo], old: TopicInfo, new: TopicInfo) -> bool:
        await asyncio.get_running_loop().run_in_executor(None, self._write, self.path, list(visible))
        return True

    async def update_configs(self, visible: Sequence[TopicInfo], topic: TopicInfo) -> bool:
        await asyncio.get_running_loop().run_in_executor(None, self._write, self.path, list(visible))
        return True

    @staticmethod
    def _write(path: str, topics: list[TopicInfo]) -> None:
        body = {"version": 1, "topics": [
            {"name": t.name, "topic_id": str(t.topic_id), "partitions": t.partitions, "configs": dict(t.configs)}
            for t in topics if not t.internal]}
        write_atomically(path, json.dumps(body, indent=1, sort_keys=True).encode())
