"""Errors of the PostgreSQL store.

The Kafka codes below are what the data plane answers (Produce); offsets writes map them
differently in coordinator/errors.py (Fenced -> NOT_COORDINATOR, unavailable -> COORDINATOR_NOT_AVAILABLE).
"""

from __future__ import annotations

from storage.errors import StorageError


class StoreUnavailableError(StorageError):
    """PostgreSQL unreachable, the connection lost, or a commit whose outcome is unknown: retriable."""

    kafka_error = "REQUEST_TIMED_OUT"
    kafka_error_code = 7


class FencedError(StorageError):
    """The partition's epoch moved past the writer's: this node no longer owns the partition."""

    kafka_error = "NOT_LEADER_OR_FOLLOWER"
    kafka_error_code = 6


class SchemaTooNewError(RuntimeError):
    """The database was migrated by a newer version of the server than this one: start-up stops."""

    def __init__(self, database_version: int, code_version: int) -> None:
        super().__init__(
            f"the PostgreSQL schema is version {database_version}, newer than this server understands "
            f"({code_version}): upgrade the server"
        )
        self.database_version = database_version
        self.code_version = code_version


class NodeIdInUseError(RuntimeError):
    """Another live node (another incarnation with an unexpired lease) holds this node.id."""

    def __init__(self, node_id: int) -> None:
        super().__init__(f"node.id {node_id} is registered by another live node (its lease has not expired)")
        self.node_id = node_id
