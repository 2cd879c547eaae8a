"""Appending batches that already carry their offsets: a PartitionLog as the node-local replica of
a log whose record is kept elsewhere (cluster mode: ``storage/pg/pg_log.py`` copies PostgreSQL's
rows into it and must keep their offsets, gaps that compaction left included).

A mixin of ``storage.log.PartitionLog``; local mode never calls it.
"""

from __future__ import annotations

from .log_fields import LogFields


class ReplicaMixin(LogFields):
    """Needs PartitionLog's ``append`` and ``_leo``."""

    def append_at(self, data: bytes | bytearray | memoryview, base_offset: int):
        """Append batches numbered contiguously from ``base_offset`` (>= the log end offset; the
        offsets in between stay a gap), keeping their offsets. ``append`` writes each batch's base
        offset again, the same value for contiguous batches, so the bytes are kept as they are.
        Bad input raises as ``append`` does and leaves the log as it was."""
        end = self._leo
        if base_offset < end:
            raise ValueError(f"base offset {base_offset} is below the log end offset {end}")
        self._leo = base_offset
        try:
            return self.append(data)  # type: ignore[attr-defined]
        except BaseException:
            self._leo = end
            raise
