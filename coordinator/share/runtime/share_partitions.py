"""The share partitions of this node (Kafka's SharePartitionManager): one SharePartition per (share group, topic
partition) the node hosts, made at its first use from the share coordinator's state, their lock timers, the share
sessions, and the writes of their state.

* First use: ReadShareGroupState (the topic partition's leader epoch); a start offset of -1 (never used) is decided
  by share.auto.offset.reset (coordinator/share/offset_reset.py) and written at once, so that a restart starts
  there too; then `SharePartition(...)` from the state. Requests for a share partition still loading wait for it.
* Acquire and acknowledge change the SharePartition at once; what a change makes durable (`Change.persist`) is
  written to the share coordinator (WriteShareGroupState), and an acknowledgement is answered only once that
  write is durable; a failed write rolls the change back (SharePartition.rollback), as Kafka does.
* Locks: one timer per share partition, at its `next_lock_deadline()`: `expire_locks` gives back the records
  whose lock ran out (AVAILABLE, or ARCHIVED at the delivery count limit) and their state is written.
* Records that become available again (released, lock expired, a member gone) wake the ShareFetches waiting
  on the share partition (the data plane's purgatory, key `share_key`).
* Members: a member that left or whose session expired (runtime/share_shard.py calls `member_gone`), or whose
  share session ended (closed, or its connection closed), gives back what it held.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from coordinator.groups.share.config_settings import ShareGroupSettings
from coordinator.share.offset_reset import parse_offset_reset, start_offset
from coordinator.share.runtime.share_coordinator import ShareCoordinator
from coordinator.share.sessions import ShareSessionCache
from coordinator.share.share_partition import Change, SharePartition
from coordinator.share.state_store import Answer, WriteState

log = structlog.get_logger(__name__)

SpKey = tuple[str, uuid.UUID, int]  # (group id, topic id, partition)
WAKE_BYTES = 1 << 30  # what a wake counts as, for a parked ShareFetch (it needs one byte)


def state_leader_epoch(target: Any) -> int:
    """The leader epoch a share partition's state requests carry: in cluster mode the ownership epoch of its topic
    partition's log (a new leader's is higher, so the share coordinator fences a former leader's late writes with
    FENCED_LEADER_EPOCH), in local mode the partition's leader epoch (the wire's constant)."""
    return getattr(target.log, "epoch", target.leader_epoch)


#: Kafka's SharePartition.fetchPersisterError: what a failed state request is answered with, to the client
PERSISTER_ERRORS = {ErrorCode.not_coordinator: ErrorCode.coordinator_not_available,
                    ErrorCode.coordinator_load_in_progress: ErrorCode.coordinator_not_available,
                    ErrorCode.group_id_not_found: ErrorCode.invalid_request,
                    ErrorCode.unknown_topic_or_partition: ErrorCode.invalid_request,
                    ErrorCode.fenced_leader_epoch: ErrorCode.not_leader_or_follower}


def persister_error(answer: Answer) -> Answer:
    code = PERSISTER_ERRORS.get(answer.error)
    return answer if code is None else Answer(code, answer.message)


def share_key(key: SpKey) -> tuple:
    """The purgatory key parked ShareFetches of a share partition watch besides the topic partition's own."""
    return ("share", *key)


@dataclass
class Entry:
    """A loaded share partition, where its topic partition is (a data_plane Partition) and its lock timer."""

    key: SpKey
    topic: str
    partition: SharePartition
    target: Any
    timer: asyncio.TimerHandle | None = None
    timer_at: float = 0.0


def _wall_ms() -> int:
    return int(time.time() * 1000)


class SharePartitions:
    def __init__(self, coordinator: ShareCoordinator, data: Any, settings: ShareGroupSettings,
                 wall_ms: Callable[[], int] = _wall_ms) -> None:
        self.coordinator = coordinator
        self.data = data  # the DataPlane: partitions, purgatory, offsets by time
        self.wall_ms = wall_ms
        self.settings_for: Callable[[str], ShareGroupSettings] = lambda _group_id: settings
        self.sessions = ShareSessionCache(settings.max_share_sessions)
        self.entries: dict[SpKey, Entry] = {}
        self._loading: dict[SpKey, asyncio.Future] = {}

    # --- first use -------------------------------------------------------------------------------------

    async def get(self, group_id: str, topic: str, topic_id: uuid.UUID, index: int, target: Any) -> Entry | Answer:
        """The loaded share partition, loading it first if need be; an Answer with the error otherwise."""
        key = (group_id, topic_id, index)
        entry = self.entries.get(key)
        if entry is not None and entry.target is target:
            return entry
        loading = self._loading.get(key)
        if loading is None:
            loading = self._loading[key] = asyncio.ensure_future(self._load(key, topic, target))
            loading.add_done_callback(lambda _f: self._loading.pop(key, None))
        try:
            return await asyncio.shield(loading)
        except Exception as exc:
            log.exception("loading a share partition failed", group=group_id, topic=topic, partition=index)
            return Answer(ErrorCode.unknown_server_error, str(exc))

    async def _load(self, key: SpKey, topic: str, target: Any) -> Entry | Answer:
        group_id, topic_id, index = key
        epoch = state_leader_epoch(target)
        answer = await self.coordinator.read(group_id, topic_id, index, epoch)
        if answer.error is not ErrorCode.none or answer.state is None:
            return persister_error(answer)
        state = answer.state
        settings = self.settings_for(group_id)
        lg = target.log
        start = state.start_offset
        if start == -1:
            start = start_offset(parse_offset_reset(settings.auto_offset_reset), lg.log_start_offset,
                                 lg.high_watermark, lambda ts: _offset_for_time(lg, ts), self.wall_ms())
            written = await self.coordinator.write(WriteState(group_id, topic_id, index, state.state_epoch,
                                                              epoch, start))
            if written.error is not ErrorCode.none:
                return persister_error(written)
        start = max(start, lg.log_start_offset)
        if self.data.partition(topic, index) is not target:  # given up or lost while loading
            return Answer(ErrorCode.not_leader_or_follower, None)
        partition = SharePartition(start, state.state_batches, state.state_epoch, settings.partition_max_record_locks,
                                   settings.delivery_count_limit, settings.record_lock_duration_ms)
        entry = self.entries[key] = Entry(key, topic, partition, target)
        log.info("share partition loaded", group=group_id, topic=topic, partition=index, start_offset=start,
                 in_flight=partition.in_flight())
        return entry

    # --- durability ------------------------------------------------------------------------------------

    async def persist(self, entry: Entry, change: Change | None, rollback: bool = True) -> ErrorCode:
        """Write what `change` made durable-worthy; on failure take it back (`rollback`). NONE when written."""
        if change is None or change.persist is None:
            return ErrorCode.none
        write = change.persist
        group_id, topic_id, index = entry.key
        answer = await self.coordinator.write(WriteState(
            group_id, topic_id, index, entry.partition.state_epoch, state_leader_epoch(entry.target),
            write.start_offset, write.state_batches, write.delivery_complete_count))
        if answer.error is ErrorCode.none:
            return ErrorCode.none
        log.warning("share partition state not written", group=group_id, partition=index, error=answer.error.name,
                    message=answer.message, rolled_back=rollback)
        if rollback:
            entry.partition.rollback(change)
            self.changed(entry)
        return persister_error(answer).error

    def changed(self, entry: Entry) -> None:
        """After any change: the lock timer follows the earliest lock; records may be available again."""
        self.arm(entry)
        self.data.purgatory.on_append(share_key(entry.key), WAKE_BYTES)

    def persist_soon(self, entry: Entry, change: Change | None) -> None:
        if change is not None and change.persist is not None:
            asyncio.ensure_future(self.persist(entry, change, rollback=False))

    # --- locks -----------------------------------------------------------------------------------------

    def arm(self, entry: Entry) -> None:
        """The lock timer of `entry` at its earliest lock deadline (none without locks)."""
        deadline = entry.partition.next_lock_deadline()
        if deadline is None:
            if entry.timer is not None:
                entry.timer.cancel()
                entry.timer = None
            return
        if entry.timer is not None and entry.timer_at == deadline:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        loop = asyncio.get_running_loop()
        entry.timer_at = deadline
        entry.timer = loop.call_later(max(0.0, (deadline - self.wall_ms()) / 1000), self._locks_due, entry)

    def _locks_due(self, entry: Entry) -> None:
        entry.timer = None
        if self.entries.get(entry.key) is not entry:
            return
        change = entry.partition.expire_locks(max(self.wall_ms(), entry.timer_at))
        if change is not None:
            log.info("share partition locks expired", group=entry.key[0], topic=entry.topic, partition=entry.key[2],
                     released=len(change.previous))
            self.persist_soon(entry, change)
        self.changed(entry)

    # --- members and sessions --------------------------------------------------------------------------

    def release(self, group_id: str, member_id: str, keys: Any = None) -> None:
        """What `member_id` holds in the share partitions of `group_id` (only `keys` if given) goes back."""
        for key, entry in list(self.entries.items()):
            if key[0] != group_id or (keys is not None and key[1:] not in keys):
                continue
            change = entry.partition.release_member(member_id)
            if change is not None:
                self.persist_soon(entry, change)
                self.changed(entry)

    def member_gone(self, group_id: str, member_id: str) -> None:
        """The member left the group or its session expired: what it holds goes back. Its share session stays
        until its connection closes or it closes it (epoch -1), as in Kafka: a leaving consumer closes it after
        its leave heartbeat."""
        self.release(group_id, member_id)

    def connection_closed(self, connection_id: str) -> None:
        """A share session lives with its connection (Kafka 4.1+): its member's records go back."""
        for session in self.sessions.connection_closed(connection_id):
            self.release(session.key[0], session.key[1], session.partitions)

    def initialize_state(self, group_id: str, state_epoch: int, partitions: Mapping[uuid.UUID, frozenset[int]],
                         done: Callable[[dict[uuid.UUID, frozenset[int]]], None]) -> None:
        """InitializeShareGroupState (start offset -1) for `partitions`; `done` gets the ones initialized."""
        async def run() -> None:
            initialized: dict[uuid.UUID, frozenset[int]] = {}
            for topic_id, indexes in partitions.items():
                ok = []
                for index in sorted(indexes):
                    answer = await self.coordinator.initialize(group_id, topic_id, index, state_epoch, -1)
                    if answer.error is ErrorCode.none:
                        ok.append(index)
                        self._forget((group_id, topic_id, index))
                    else:
                        log.warning("share-group state not initialized", group=group_id, partition=index,
                                    error=answer.error.name)
                if ok:
                    initialized[topic_id] = frozenset(ok)
            done(initialized)

        asyncio.ensure_future(run())

    def delete_state(self, group_id: str, partitions: Mapping[uuid.UUID, frozenset[int]]) -> None:
        """DeleteShareGroupState for `partitions` (a deleted group's); its share partitions here are dropped."""
        async def run() -> None:
            for topic_id, indexes in partitions.items():
                for index in sorted(indexes):
                    self._forget((group_id, topic_id, index))
                    answer = await self.coordinator.delete(group_id, topic_id, index)
                    if answer.error is not ErrorCode.none:
                        log.warning("share-group state not deleted", group=group_id, partition=index,
                                    error=answer.error.name)

        asyncio.ensure_future(run())

    def _forget(self, key: SpKey) -> None:
        entry = self.entries.pop(key, None)
        if entry is not None and entry.timer is not None:
            entry.timer.cancel()

    def forget(self, group_id: str, topic_id: uuid.UUID) -> None:
        """The share partitions of a group's topic are dropped here: their state was deleted or reset."""
        for key in [k for k in self.entries if k[0] == group_id and k[1] == topic_id]:
            self._forget(key)

    def topic_partition_gone(self, topic: str, index: int) -> None:
        """Cluster mode: this node no longer leads the topic partition (given up or lost): its share partitions
        are dropped here (lock timers cancelled, nothing more written); the new leader loads them from the
        share coordinator's state, where the records acquired here and never acknowledged are available."""
        for key in [k for k, entry in self.entries.items() if entry.topic == topic and k[2] == index]:
            self._forget(key)

    def close(self) -> None:
        for key in list(self.entries):
            self._forget(key)


def _offset_for_time(lg: Any, timestamp: int) -> int | None:
    """ListOffsets by time: the first offset whose record is at or after `timestamp` (None: none)."""
    found = lg.offset_for_timestamp(timestamp)
    return None if found is None else int(found.offset)
