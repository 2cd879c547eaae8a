"""What the transactional APIs share on the wire."""

from __future__ import annotations

from kio.schema.errors import ErrorCode


def fenced_for(code: ErrorCode, version: int, understood_from: int) -> ErrorCode:
    """KafkaApis: clients older than the version that introduced PRODUCER_FENCED (KIP-588) get
    INVALID_PRODUCER_EPOCH instead, which they handle the same way."""
    if code is ErrorCode.producer_fenced and version < understood_from:
        return ErrorCode.invalid_producer_epoch
    return code
