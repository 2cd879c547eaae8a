"""The surface of a partition's log that the layers above use, whoever keeps its bytes.

Two classes have it: `storage.log.PartitionLog` (local mode: segment files under log.dirs) and
`storage.pg.pg_log.PgPartitionLog` (cluster mode: PostgreSQL's rows, read from a local replica). The
offsets runtime (DurableLog), the transaction state log, the data plane (Partition.log: Produce, Fetch,
ListOffsets, retention, compaction, DeleteTopics) and cluster mode's LogFactory take a
`PartitionLogProtocol`, so either can be handed to them; mypy checks both classes against it where the
factories hand them over (cluster/log_factory.py's LocalLogFactory returns local logs as one;
cluster/node_runtime.py gives cluster/pg_log_factory.py's PgLogFactory, whose logs are PgPartitionLogs,
where a LogFactory is expected).

What only one of them has stays off this surface: a local log's `close_sync`, `segments` and
`on_repaired`; a PostgreSQL log's `pool`, `topic_id`, `epoch` and `reload_replica`. Code that needs them
narrows with `isinstance` first.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Executor
from typing import Protocol

from .cleaner import CleanStats
from .errors import StorageError
from .log import AppendResult
from .log_compaction import CompactionPolicy
from .log_timestamps import TimestampOffset
from .retention_rules import SegmentInfo


class PartitionLogProtocol(Protocol):
    """A partition's log: offsets assigned at append, readable below the high watermark once durable."""

    path: str  # its directory (a PostgreSQL log's: its local replica's)

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int:
        """The next offset to be assigned (appends not yet durable included)."""

    @property
    def high_watermark(self) -> int:
        """The end of the durable records: reads stop there."""

    @property
    def flushing(self) -> bool:
        """Appends wait to be made durable, or a write is running."""

    @property
    def failed(self) -> StorageError | None:
        """The error a failed write left: appends are refused until the log is repaired (local) or
        opened again (PostgreSQL); None while it is writable."""

    def append(self, data: bytes | bytearray | memoryview, *,
               partition_leader_epoch: int | None = None, flush_now: bool = False) -> AppendResult: ...

    async def flush(self) -> None: ...

    def read(self, start_offset: int, max_bytes: int = 1 << 20) -> bytes: ...

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None: ...

    def max_timestamp_offset(self) -> TimestampOffset | None: ...

    def advance_log_start(self, offset: int) -> int: ...

    async def checkpoint_log_start(self) -> None: ...

    async def start_empty_at(self, offset: int) -> None: ...

    def segment_infos(self) -> list[SegmentInfo]: ...

    async def delete_oldest(self, count: int, executor: Executor | None) -> int: ...

    async def compact(self, policy: CompactionPolicy, now_ms: int, executor: Executor | None, *,
                      last_stable_offset: int | None = None,
                      aborted_txns: Iterable[tuple[int, int, int]] = ()) -> CleanStats | None: ...

    def rename_dir(self, new_path: str) -> None: ...

    def moved_to(self, new_path: str) -> None: ...

    async def close(self) -> None: ...

    async def delete(self) -> None: ...
