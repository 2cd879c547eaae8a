"""One hosted topic partition: its log, its producer state (idempotence and transactions), its effective
topic config and its leader epoch (0 in local mode; the ownership epoch in cluster mode, as Metadata
reports it)."""

from __future__ import annotations

import shutil

from coordinator.data_plane.producer_state import ProducerStateTable
from coordinator.data_plane.topic_configs import EffectiveConfig
from storage.log import PartitionLog
from storage.log_protocol import PartitionLogProtocol


class Partition:
    __slots__ = ("topic", "index", "key", "log", "producers", "config", "leader_epoch", "stable_notified")

    def __init__(self, topic: str, index: int, log_: PartitionLogProtocol, config: EffectiveConfig,
                 leader_epoch: int = 0) -> None:
        self.topic, self.index, self.key = topic, index, (topic, index)
        self.log = log_
        self.producers = ProducerStateTable()
        self.config = config
        self.leader_epoch = leader_epoch
        self.stable_notified = 0  # the byte mark of the LSO read_committed delayed fetches were told of
        on_repaired = getattr(log_, "on_repaired", None)  # a local PartitionLog's (storage/log_repair.py)
        if on_repaired is not None:
            on_repaired.append(self.log_repaired)

    def rebuild_producers(self) -> int:
        """Rebuild the producer state from the log (before any append); returns the producer batches seen."""
        seen = self.producers.rebuild(self.log)
        self.stable_notified = self.producers.txns.stable_mark(self.log.high_watermark)
        return seen

    def log_repaired(self) -> None:
        """The log went back to its last good position after a failed write: the producer state, which
        recorded the failed batches (their sequences, offsets, transactions begun or ended), is rebuilt
        from what the log holds, so that a producer's retry is appended again, never taken for a duplicate."""
        self.producers = ProducerStateTable()
        self.rebuild_producers()

    @property
    def last_stable_offset(self) -> int:
        """Kafka's UnifiedLog.lastStableOffset: the first offset of the earliest transaction not yet decided
        (or whose marker is not yet durable), never past the high watermark; else the high watermark."""
        lg = self.log
        return self.producers.txns.last_stable_offset(lg.high_watermark, lg.log_start_offset)

    def stable_bytes_gained(self) -> int:
        """Bytes that became readable below the LSO since the last call (for read_committed delayed fetches)."""
        mark = self.producers.txns.stable_mark(self.log.high_watermark)
        gained = mark - self.stable_notified
        if gained > 0:
            self.stable_notified = mark
            return gained
        return 0


def local_log(part: Partition) -> PartitionLog:
    """The partition's log as the local PartitionLog the data plane opens itself in local mode (at start, for a
    new topic or new partitions; cluster mode's come from its LogFactory, taken by `take_partition`)."""
    log_ = part.log
    assert isinstance(log_, PartitionLog), f"{part.key}: not a local log"
    return log_


def discard_local(parts: list[Partition]) -> None:
    """In a worker thread: close and remove the local logs opened for a topic (or partitions) whose creation failed."""
    for part in parts:
        log_ = local_log(part)
        log_.close_sync()
        shutil.rmtree(log_.path, ignore_errors=True)
