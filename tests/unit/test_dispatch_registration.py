"""Dispatcher.register is the one way in: a handler per api key, optionally with its fast path,
which is asked first and hands the frame to the handler by answering None."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v0.response import FindCoordinatorResponse

from coordinator.net.dispatch import Dispatcher
from protocol.apis import ApiKey
from protocol.codec import encode_response
from tests.support.data_plane import req
from tests.support.wire_client import request_frame

ANSWER = FindCoordinatorResponse(error_code=ErrorCode.none, node_id=1, host="h", port=9)


def test_the_fast_path_answers_first_and_declines_to_the_handler():
    seen: list[str] = []

    def handler(ctx, request):
        seen.append("handler")
        return ANSWER

    def fast(frame, version, correlation_id):
        seen.append("fast")
        return b"fast answer" if correlation_id == 1 else None

    dispatcher = Dispatcher()
    dispatcher.register(ApiKey.FIND_COORDINATOR, handler, fast=fast)
    assert dispatcher.handler(ApiKey.FIND_COORDINATOR) is handler
    assert dispatcher.fast_path(ApiKey.FIND_COORDINATOR) is fast
    request = req(ApiKey.FIND_COORDINATOR, 0, key="g")
    assert dispatcher.dispatch(request_frame(request, 1)[4:], "127.0.0.1", 1) == b"fast answer"
    assert seen == ["fast"]
    assert dispatcher.dispatch(request_frame(request, 2)[4:], "127.0.0.1", 1) == encode_response(2, 0, ANSWER)
    assert seen == ["fast", "fast", "handler"]


def test_an_api_key_is_registered_once_and_verify_wants_every_api():
    dispatcher = Dispatcher()
    dispatcher.register(ApiKey.FIND_COORDINATOR, lambda ctx, request: ANSWER)
    with pytest.raises(ValueError):
        dispatcher.register(ApiKey.FIND_COORDINATOR, lambda ctx, request: ANSWER, fast=lambda *a: None)
    with pytest.raises(KeyError):
        dispatcher.fast_path(ApiKey.FIND_COORDINATOR)  # refused with the handler: not registered
    with pytest.raises(RuntimeError, match="missing"):
        dispatcher.verify()
