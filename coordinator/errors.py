"""The one place where internal failures become Kafka wire error codes.

Handlers raise or return these domain errors; anything that must reach a client as an
error code goes through `error_code_for`, so the mapping (including storage errors,
added with the offsets log) is written once.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from storage.errors import StorageError
from storage.pg.errors import FencedError, StoreUnavailableError


class KafkaError(Exception):
    """A failure with a definite Kafka error code."""

    code: ErrorCode = ErrorCode.unknown_server_error

    def __init__(self, message: str = "", code: ErrorCode | None = None) -> None:
        super().__init__(message or self.__class__.__name__)
        if code is not None:
            self.code = code


class InvalidRequest(KafkaError):
    code = ErrorCode.invalid_request




class InvalidTopic(KafkaError):
    code = ErrorCode.invalid_topic_exception


class UnknownTopicOrPartition(KafkaError):
    code = ErrorCode.unknown_topic_or_partition



class NotCoordinator(KafkaError):
    code = ErrorCode.not_coordinator


class EarlierWriteFailed(KafkaError):
    """A shard's write taken back because an earlier one failed alone (the log refused it: too large, cannot be
    encoded; runtime/journal.py): it was never written. Retriable, as Kafka answers a coordinator write that did
    not reach the log."""

    code = ErrorCode.coordinator_not_available


# --- classic group membership (GroupMetadataManager / ClassicGroup) -------------

class UnknownMemberId(KafkaError):
    code = ErrorCode.unknown_member_id


class FencedInstanceId(KafkaError):
    code = ErrorCode.fenced_instance_id


class FencedMemberEpoch(KafkaError):
    """KIP-848: the member's epoch is not the one the group knows; it must rejoin with epoch 0."""

    code = ErrorCode.fenced_member_epoch









# --- embedded data plane (topics, Produce, Fetch, ListOffsets) -----------------
# Record-level failures raised by storage/ (CorruptRecordError, InvalidRecordError,
# UnsupportedCompressionError, RecordTooLargeError, StorageError, OffsetOutOfRangeError)
# carry their Kafka code and are mapped by `error_code_for` below.

class CorruptMessage(KafkaError):
    code = ErrorCode.corrupt_message


class InvalidRecord(KafkaError):
    code = ErrorCode.invalid_record


class RecordValidation(KafkaError):
    """Records a topic refuses (LogValidator's RecordValidationException): INVALID_TIMESTAMP or
    INVALID_RECORD, with the record errors [(index in the batch, message)] the Produce answer lists."""

    code = ErrorCode.invalid_record

    def __init__(self, message: str, record_errors: list[tuple[int, str]], timestamp: bool = False) -> None:
        super().__init__(message, ErrorCode.invalid_timestamp if timestamp else None)
        self.record_errors = record_errors


class UnsupportedCompressionType(KafkaError):
    code = ErrorCode.unsupported_compression_type


class MessageTooLarge(KafkaError):
    code = ErrorCode.message_too_large


class RecordListTooLarge(KafkaError):
    code = ErrorCode.record_list_too_large


class OutOfOrderSequence(KafkaError):
    code = ErrorCode.out_of_order_sequence_number


class InvalidProducerEpoch(KafkaError):
    code = ErrorCode.invalid_producer_epoch


class InvalidTxnState(KafkaError):
    code = ErrorCode.invalid_txn_state


class TopicAlreadyExists(KafkaError):
    code = ErrorCode.topic_already_exists


class InvalidPartitions(KafkaError):
    code = ErrorCode.invalid_partitions


class InvalidReplicationFactor(KafkaError):
    code = ErrorCode.invalid_replication_factor


class InvalidReplicaAssignment(KafkaError):
    code = ErrorCode.invalid_replica_assignment


class InvalidConfig(KafkaError):
    code = ErrorCode.invalid_config


class UnknownTopicId(KafkaError):
    code = ErrorCode.unknown_topic_id


class TopicDeletionDisabled(KafkaError):
    code = ErrorCode.topic_deletion_disabled


class PolicyViolation(KafkaError):
    code = ErrorCode.policy_violation


class ProducerIdsUnavailable(KafkaError):
    """No producer id block could be reserved now (cluster mode: PostgreSQL unreachable).
    Kafka's ProducerIdManager answers COORDINATOR_LOAD_IN_PROGRESS, which clients retry."""

    code = ErrorCode.coordinator_load_in_progress




# Cluster mode (storage.url): PostgreSQL store failures, by what the client should do.
# FencedError: another node took the partition (its epoch moved) -> NOT_LEADER_OR_FOLLOWER, which
# the write remap below turns into NOT_COORDINATOR for group records: the client looks the owner up
# again. StoreUnavailableError: PostgreSQL unreachable or the commit outcome unknown -> REQUEST_TIMED_OUT
# (a produce retries; group records remap it to COORDINATOR_NOT_AVAILABLE, as Kafka answers a
# timed-out __consumer_offsets append). Neither is ever a success.
_STORE_CODES: tuple[tuple[type[BaseException], ErrorCode], ...] = (
    (FencedError, ErrorCode.not_leader_or_follower),
    (StoreUnavailableError, ErrorCode.request_timed_out),
)


def error_code_for(exc: BaseException) -> ErrorCode:
    if isinstance(exc, KafkaError):
        return exc.code
    for store_error, store_code in _STORE_CODES:
        if isinstance(exc, store_error):
            return store_code
    storage_code = getattr(exc, "kafka_error_code", None)  # storage/errors.py carries Kafka's code
    if isinstance(storage_code, int):
        try:
            return ErrorCode(storage_code)
        except ValueError:
            pass
    return ErrorCode.unknown_server_error


# Kafka: GroupMetadataManager.appendGroupMetadataErrorToResponseError (and the same remap in
# CoordinatorOperationExceptionHelper): a failed append of coordinator records is answered
# with a coordinator error the client knows how to retry.
_WRITE_ERROR_REMAP = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
    ErrorCode.invalid_fetch_size: ErrorCode.unknown_server_error,
}


def logged_by_storage(exc: BaseException | None) -> bool:
    """A failure of a log the storage layer reports itself, once and not per request (a failing log
    directory: storage/disk_health.py; a failed PostgreSQL log: storage.pg.log_failed): the handlers'
    and groups' per-request lines for it are debug, so a full disk does not log one line per request."""
    return isinstance(exc, StorageError)


def write_error_code(exc: BaseException) -> ErrorCode:
    """The wire error for a failed write of group records (Kafka's remap of append errors)."""
    code = error_code_for(exc)
    return _WRITE_ERROR_REMAP.get(code, code)


# Kafka (GroupMetadataManager.storeOffsets, kept by the new coordinator's OffsetCommit
# path): a commit whose records are too large for the log is INVALID_COMMIT_OFFSET_SIZE.
_COMMIT_TOO_LARGE = {ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.invalid_fetch_size}


def commit_error_code(exc: BaseException) -> ErrorCode:
    """The wire error for a failed write of OffsetCommit records."""
    code = error_code_for(exc)
    if code in _COMMIT_TOO_LARGE:
        return ErrorCode.invalid_commit_offset_size
    return _WRITE_ERROR_REMAP.get(code, code)


# Kafka's default messages (Errors.java), for the few places the wire carries them.
_MESSAGES = {
    ErrorCode.none: "NONE",
    ErrorCode.coordinator_not_available: "The coordinator is not available.",
    ErrorCode.invalid_group_id: "The configured groupId is invalid.",
    ErrorCode.unsupported_version: "The version of API is not supported.",
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.invalid_request: (
        "This most likely occurs because of a request being malformed by the client library or the "
        "message was sent to an incompatible broker. See the broker logs for more details."
    ),
}


def error_message(code: ErrorCode) -> str | None:
    return _MESSAGES.get(code)
