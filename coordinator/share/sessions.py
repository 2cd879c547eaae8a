"""Share sessions (Kafka 4.2's ShareSessionCache and ShareSession), pure.

A share session belongs to a (group id, member id) and tells which share partitions a member fetches, so
that ShareFetch requests after the first can be incremental. Its epoch (ShareFetch / ShareAcknowledge
ShareSessionEpoch): 0 opens a session, replacing one the member had (the partitions the old one held are
released by the caller); -1 closes it; any other value must be the session's current epoch
(INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND when there is none) and the next request uses the next
one (after 2^31 - 1 comes 1). The cache holds at most group.share.max.share.sessions sessions: opening one
more is SHARE_SESSION_LIMIT_REACHED. A session lives as long as its connection and its member: closing the
connection or the member leaving the group removes it (Kafka 4.1 dropped time-based eviction).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
MAX_SHARE_SESSIONS = 2000  # group.share.max.share.sessions

SessionKey = tuple[str, str]  # (group id, member id)
SharePartitionId = tuple[uuid.UUID, int]  # (topic id, partition)


def next_epoch(epoch: int) -> int:
    """ShareRequestMetadata.nextEpoch: 0 and -1 stay, the largest int32 wraps to 1."""
    if epoch < 0 or epoch == INITIAL_EPOCH:
        return epoch
    return 1 if epoch == 2**31 - 1 else epoch + 1


@dataclass
class ShareSession:
    key: SessionKey
    connection_id: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: set[SharePartitionId] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class SessionAnswer:
    error: ErrorCode = ErrorCode.none
    session: ShareSession | None = None
    replaced: ShareSession | None = None  # the session an epoch-0 request replaced (release what it held)
    closed: ShareSession | None = None  # the session an epoch -1 request closed (release what it held)


class ShareSessionCache:
    def __init__(self, max_sessions: int = MAX_SHARE_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[SessionKey, ShareSession] = {}

    def request(self, group_id: str, member_id: str, epoch: int, connection_id: str,
                added: Iterable[SharePartitionId] = (), forgotten: Iterable[SharePartitionId] = ()) -> SessionAnswer:
        """The session of a ShareFetch (or ShareAcknowledge: no partitions) at `epoch`, updated."""
        key = (group_id, member_id)
        current = self.sessions.get(key)
        if epoch == INITIAL_EPOCH:
            replaced = self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions:
                if replaced is not None:
                    self.sessions[key] = replaced
                return SessionAnswer(ErrorCode.share_session_limit_reached)
            session = self.sessions[key] = ShareSession(key, connection_id, 1, set(added) - set(forgotten))
            return SessionAnswer(session=session, replaced=replaced)
        if current is None:
            return SessionAnswer(ErrorCode.share_session_not_found)
        if epoch == FINAL_EPOCH:
            del self.sessions[key]
            return SessionAnswer(session=current, closed=current)
        if epoch != current.epoch:
            return SessionAnswer(ErrorCode.invalid_share_session_epoch)
        current.partitions = (current.partitions | set(added)) - set(forgotten)
        current.epoch = next_epoch(current.epoch)
        current.connection_id = connection_id
        return SessionAnswer(session=current)

    def acknowledge_update(self, group_id: str, member_id: str, epoch: int) -> SessionAnswer:
        """The session of a ShareAcknowledge (SharePartitionManager.acknowledgeSessionUpdate): epoch 0 is
        INVALID_SHARE_SESSION_EPOCH (an acknowledgement never opens a session), -1 leaves the session as it is
        (the caller closes it after the acknowledgements), any other must be the current one, then the next."""
        if epoch == INITIAL_EPOCH:
            return SessionAnswer(ErrorCode.invalid_share_session_epoch)
        current = self.sessions.get((group_id, member_id))
        if current is None:
            return SessionAnswer(ErrorCode.share_session_not_found)
        if epoch == FINAL_EPOCH:
            return SessionAnswer(session=current)
        if epoch != current.epoch:
            return SessionAnswer(ErrorCode.invalid_share_session_epoch)
        current.epoch = next_epoch(current.epoch)
        return SessionAnswer(session=current)

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def connection_closed(self, connection_id: str) -> list[ShareSession]:
        """The sessions of a closed connection are gone (their members' acquired records are released)."""
        gone = [s for s in self.sessions.values() if s.connection_id == connection_id]
        for session in gone:
            del self.sessions[session.key]
        return gone

    def member_left(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)
