"""The one place where internal failures become Kafka wire error codes.

Handlers raise or return these domain errors; anything that must reach a client as an
error code goes through `error_code_for`, so the mapping (including storage errors,
added with the offsets log) is written once.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class KafkaError(Exception):
    """A failure with a definite Kafka error code."""

    code: ErrorCode = ErrorCode.unknown_server_error

    def __init__(self, message: str = "", code: ErrorCode | None = None) -> None:
        super().__init__(message or self.__class__.__name__)
        if code is not None:
            self.code = code


class InvalidRequest(KafkaError):
    code = ErrorCode.invalid_request


class InvalidGroupId(KafkaError):
    code = ErrorCode.invalid_group_id


class CoordinatorNotAvailable(KafkaError):
    code = ErrorCode.coordinator_not_available


class InvalidTopic(KafkaError):
    code = ErrorCode.invalid_topic_exception


class UnknownTopicOrPartition(KafkaError):
    code = ErrorCode.unknown_topic_or_partition


def error_code_for(exc: BaseException) -> ErrorCode:
    if isinstance(exc, KafkaError):
        return exc.code
    return ErrorCode.unknown_server_error


# Kafka's default messages (Errors.java), for the few places the wire carries them.
_MESSAGES = {
    ErrorCode.none: "NONE",
    ErrorCode.coordinator_not_available: "The coordinator is not available.",
    ErrorCode.invalid_group_id: "The configured groupId is invalid.",
    ErrorCode.unsupported_version: "The version of API is not supported.",
    ErrorCode.invalid_request: (
        "This most likely occurs because of a request being malformed by the client library or the "
        "message was sent to an incompatible broker. See the broker logs for more details."
    ),
}


def error_message(code: ErrorCode) -> str | None:
    return _MESSAGES.get(code)
