"""The bodies of kc_share_state's questions and answers (storage/pg/share_state_calls.py): a share-group state
request (its operation and arguments) and its Answer, as compact JSON. State batches are written as offsets
relative to the one before (runs of small numbers, which zlib shrinks well); a body that does not decode is a
ValueError."""

from __future__ import annotations

import json
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.share.state_store import Answer, ShareGroupOffset, WriteState
from storage.share_state_records import StateBatch

OPERATIONS = ("read", "write", "initialize", "delete", "summary")


def _batches(batches: tuple[StateBatch, ...]) -> list[int]:
    out: list[int] = []
    previous = 0
    for b in batches:
        out += [b.first_offset - previous, b.last_offset - b.first_offset, b.delivery_state, b.delivery_count]
        previous = b.last_offset
    return out


def _unbatches(flat: list[int]) -> tuple[StateBatch, ...]:
    if len(flat) % 4:
        raise ValueError("state batches: not a multiple of 4 numbers")
    out = []
    previous = 0
    for i in range(0, len(flat), 4):
        first = previous + int(flat[i])
        last = first + int(flat[i + 1])
        out.append(StateBatch(first, last, int(flat[i + 2]), int(flat[i + 3])))
        previous = last
    return tuple(out)


def encode_call(operation: str, args: dict[str, Any]) -> bytes:
    """`args`: the keyword arguments of ShareCoordinator.<operation>; a WriteState under "request"."""
    body = dict(args)
    if "topic_id" in body:
        body["topic_id"] = body["topic_id"].hex
    request = body.pop("request", None)
    if isinstance(request, WriteState):
        body["request"] = [request.group, request.topic_id.hex, request.partition, request.state_epoch,
                           request.leader_epoch, request.start_offset, _batches(request.state_batches),
                           request.delivery_complete_count]
    return json.dumps({"op": operation, **body}, separators=(",", ":")).encode()


def decode_call(body: bytes) -> tuple[str, dict[str, Any]]:
    try:
        args = json.loads(body)
        operation = args.pop("op")
        if operation not in OPERATIONS:
            raise ValueError(f"no share-group state operation {operation!r}")
        if "topic_id" in args:
            args["topic_id"] = uuid.UUID(hex=args["topic_id"])
        if "request" in args:
            group, topic_id, partition, state_epoch, leader_epoch, start, batches, complete = args["request"]
            args["request"] = WriteState(str(group), uuid.UUID(hex=topic_id), int(partition), int(state_epoch),
                                         int(leader_epoch), int(start), _unbatches(batches), int(complete))
        return operation, args
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"malformed share-group state request: {exc!r}") from None


def encode_answer(answer: Answer) -> bytes:
    s = answer.state
    state = None if s is None else [s.snapshot_epoch, s.state_epoch, s.leader_epoch, s.start_offset,
                                    _batches(s.state_batches), s.create_timestamp, s.write_timestamp,
                                    s.delivery_complete_count]
    return json.dumps([int(answer.error), answer.message, state], separators=(",", ":")).encode()


def decode_answer(body: bytes) -> Answer:
    try:
        code, message, state = json.loads(body)
        try:
            error = ErrorCode(int(code))
        except ValueError:
            error = ErrorCode.unknown_server_error
        if state is None:
            return Answer(error, message)
        snapshot, state_epoch, leader_epoch, start, batches, created, written, complete = state
        return Answer(error, message, ShareGroupOffset(int(snapshot), int(state_epoch), int(leader_epoch),
                                                       int(start), _unbatches(batches), int(created), int(written),
                                                       int(complete)))
    except (TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"malformed share-group state answer: {exc!r}") from None
