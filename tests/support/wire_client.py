"""The wire client of the tests: bench/lib/wire.py's (one client for tests and benchmarks), sending the
client id "test-client" unless told otherwise. It decodes answers with kio's reader, so tests check the
server against an independent decoder."""

from __future__ import annotations

from typing import Any

from bench.lib import wire
from bench.lib.wire import response_class_for

__all__ = ["CLIENT_ID", "WireClient", "request_frame", "response_class_for"]

CLIENT_ID = "test-client"


def request_frame(request: Any, correlation_id: int, client_id: str | None = CLIENT_ID) -> bytes:
    return wire.request_frame(request, correlation_id, client_id)


class WireClient(wire.WireClient):
    client_id = CLIENT_ID
