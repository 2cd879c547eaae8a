"""The state PartitionLog shares with its mixins (log_files, log_retention, log_compaction), declared once.

Annotations only: PartitionLog.__init__ sets every one of them. Declaring them here lets the type checker
check the mixins' code against the real types without a mixin importing log.py (which imports the mixins).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING

from .errors import StorageError
from .segment import Segment


class LogFields:
    path: str
    segment_bytes: int
    _segments: list[Segment]
    _bases: list[int]
    _index_interval: int
    _fsync: Callable[[int], None]
    _executor: Executor
    _leo: int
    _hw: int
    _log_start: int
    _checkpointed_start: int
    _checkpoint_lock: asyncio.Lock | None
    _pending: list[list]  # [segment, position, [buffers]]
    _pending_futures: list[asyncio.Future]
    _rolled: list[tuple[Segment, tuple[int, int]]]  # (segment, its index fds)
    _dir_fd: int
    _idle_listed: bool
    _flush_handle: asyncio.Handle | None
    _inflight: asyncio.Future | None
    _failed: StorageError | None
    _closed: bool
    _unsynced: bool

    if TYPE_CHECKING:  # defined by PartitionLog (log.py) and LogFiles (log_files.py)
        def _check_writable(self) -> None: ...
        def _start_flush(self) -> None: ...
        def _awaits_flush(self, seg: Segment) -> bool: ...
        def _list_if_idle(self) -> None: ...
        async def roll_at_end(self, base_offset: int | None = None) -> Segment: ...
