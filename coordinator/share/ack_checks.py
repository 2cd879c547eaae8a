"""The checks Kafka makes on a partition's AcknowledgementBatches before a share partition sees them
(KafkaApis / SharePartitionManager): INVALID_REQUEST for a range whose first offset is past its last, a list
of types that is neither one type nor one per offset, a type outside Gap/Accept/Release/Reject (and Renew
where the request may carry it: ShareFetch / ShareAcknowledge v2 with IsRenewAck), or batches that are not in
ascending order or overlap."""

from __future__ import annotations

from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from .record_states import AckBatch, AckType


def check_ack_batches(batches: Sequence[AckBatch], renew_allowed: bool) -> tuple[ErrorCode, str] | None:
    """None when the batches may be applied, else (INVALID_REQUEST, why)."""
    highest = AckType.RENEW if renew_allowed else AckType.REJECT
    previous_last: int | None = None
    for batch in batches:
        if batch.first_offset > batch.last_offset:
            return ErrorCode.invalid_request, "First offset of the acknowledgement batch is after its last offset"
        size = batch.last_offset - batch.first_offset + 1
        if not batch.types or (len(batch.types) > 1 and len(batch.types) != size):
            return ErrorCode.invalid_request, "Size of acknowledge types must be 1 or equal to the batch size"
        if any(t < AckType.GAP or t > highest for t in batch.types):
            return ErrorCode.invalid_request, "Invalid acknowledge type"
        if previous_last is not None and batch.first_offset <= previous_last:
            return ErrorCode.invalid_request, "Acknowledgement batches must be in ascending order and not overlap"
        previous_last = batch.last_offset
    return None
