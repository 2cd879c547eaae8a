"""Cluster mode's store failures reach clients as retriable Kafka errors, never as success."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from coordinator.errors import commit_error_code, error_code_for, write_error_code
from storage.pg.errors import FencedError, StoreUnavailableError


@pytest.mark.parametrize("exc, produce, group_write, commit", [
    # another node took the partition: the client looks the owner up again
    (FencedError("epoch moved"), ErrorCode.not_leader_or_follower, ErrorCode.not_coordinator,
     ErrorCode.not_coordinator),
    # PostgreSQL unreachable / commit outcome unknown: retry (Kafka's timed-out offsets append)
    (StoreUnavailableError("connection lost"), ErrorCode.request_timed_out, ErrorCode.coordinator_not_available,
     ErrorCode.coordinator_not_available),
])
def test_store_errors_map_to_retriable_codes(exc, produce, group_write, commit):
    assert error_code_for(exc) is produce
    assert write_error_code(exc) is group_write
    assert commit_error_code(exc) is commit
