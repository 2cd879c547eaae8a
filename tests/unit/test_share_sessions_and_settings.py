"""Share sessions (ShareSessionCache), the AcknowledgementBatches checks, share.auto.offset.reset and the
group.share.* settings / share.* group configs."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from coordinator.config_values import ConfigError
from coordinator.groups.share.config_settings import (
    SHARE_GROUP_SETTINGS,
    ShareGroupSettings,
    apply_group_configs,
    check,
    share_group_settings,
)
from coordinator.share.ack_checks import check_ack_batches
from coordinator.share.offset_reset import OffsetReset, parse_offset_reset, start_offset
from coordinator.share.record_states import AckBatch
from coordinator.share.sessions import ShareSessionCache, next_epoch

TP = (uuid.UUID(int=1), 0)


def test_session_epochs():
    cache = ShareSessionCache(max_sessions=1)
    assert cache.request("g", "m", 3, "c1").error == ErrorCode.share_session_not_found
    opened = cache.request("g", "m", 0, "c1", added={TP})
    assert opened.error == ErrorCode.none and opened.session is not None and opened.session.epoch == 1
    assert cache.request("g", "m", 2, "c1").error == ErrorCode.invalid_share_session_epoch
    assert cache.request("g", "m", 1, "c1", forgotten={TP}).session.partitions == set()  # type: ignore[union-attr]
    assert cache.request("g", "other", 0, "c2").error == ErrorCode.share_session_limit_reached
    again = cache.request("g", "m", 0, "c1")
    assert again.replaced is not None and again.session is not None and again.session.epoch == 1
    closed = cache.request("g", "m", -1, "c1")
    assert closed.closed is not None and cache.sessions == {}
    assert cache.request("g", "m", -1, "c1").error == ErrorCode.share_session_not_found
    assert next_epoch(2**31 - 1) == 1 and next_epoch(0) == 0 and next_epoch(5) == 6


def test_sessions_end_with_their_connection_or_member():
    cache = ShareSessionCache()
    cache.request("g", "a", 0, "c1")
    cache.request("g", "b", 0, "c2")
    assert [s.key for s in cache.connection_closed("c1")] == [("g", "a")]
    assert cache.member_left("g", "b") is not None and cache.sessions == {}


def test_ack_batch_checks():
    ok = [AckBatch(0, 4, (1,)), AckBatch(5, 6, (2, 3))]
    assert check_ack_batches(ok, renew_allowed=False) is None
    bad = [[AckBatch(5, 4, (1,))], [AckBatch(0, 2, (1, 1))], [AckBatch(0, 0, ())], [AckBatch(0, 0, (5,))],
           [AckBatch(0, 0, (4,))], [AckBatch(0, 4, (1,)), AckBatch(4, 6, (1,))],
           [AckBatch(5, 6, (1,)), AckBatch(0, 1, (1,))]]
    for batches in bad:
        result = check_ack_batches(batches, renew_allowed=False)
        assert result is not None and result[0] == ErrorCode.invalid_request, batches
    assert check_ack_batches([AckBatch(0, 0, (4,))], renew_allowed=True) is None


def test_offset_reset():
    assert parse_offset_reset("latest") == OffsetReset("latest")
    assert parse_offset_reset("EARLIEST") == OffsetReset("earliest")
    assert parse_offset_reset("by_duration:PT1H30M") == OffsetReset("by_duration", 90 * 60_000)
    assert parse_offset_reset("by_duration:P1DT0.5S") == OffsetReset("by_duration", 86_400_000 + 500)
    for bad in ("none", "by_duration:", "by_duration:P", "by_duration:-PT1H", "by_duration:PT", "by_duration:1H"):
        with pytest.raises(ValueError):
            parse_offset_reset(bad)
    times = {1000: 7}
    assert start_offset(OffsetReset("earliest"), 3, 20, times.get, 5000) == 3
    assert start_offset(OffsetReset("latest"), 3, 20, times.get, 5000) == 20
    assert start_offset(OffsetReset("by_duration", 4000), 3, 20, times.get, 5000) == 7
    assert start_offset(OffsetReset("by_duration", 1), 3, 20, times.get, 5000) == 20  # nothing that late


def _config(**over):
    values = {attr: parser(default) for attr, parser, default, _doc in SHARE_GROUP_SETTINGS.values()}
    values.update(over)
    return SimpleNamespace(**values)


def test_broker_settings():
    check(_config())
    settings = share_group_settings(_config())
    assert (settings.session_timeout_ms, settings.delivery_count_limit, settings.partition_max_record_locks) == (
        45_000, 5, 2000)
    with pytest.raises(ConfigError):
        check(_config(group_share_record_lock_duration_ms=70_000))
    with pytest.raises(ConfigError):
        check(_config(group_share_session_timeout_ms=40_000))
    parse = SHARE_GROUP_SETTINGS["group.share.delivery.count.limit"][1]
    with pytest.raises(ValueError):
        parse("11")
    with pytest.raises(ValueError):
        SHARE_GROUP_SETTINGS["group.share.assignors"][1]("uniform")


def test_group_configs():
    base = ShareGroupSettings()
    got = apply_group_configs(base, {"share.record.lock.duration.ms": "20000", "share.auto.offset.reset": "earliest",
                                     "share.isolation.level": "read_committed", "share.session.timeout.ms": "50000"})
    assert (got.record_lock_duration_ms, got.auto_offset_reset, got.isolation_level, got.session_timeout_ms) == (
        20_000, "earliest", "read_committed", 50_000)
    for bad in ({"share.record.lock.duration.ms": "1000"}, {"share.session.timeout.ms": "x"},
                {"share.auto.offset.reset": "none"}, {"share.isolation.level": "dirty"}, {"share.nope": "1"},
                {"share.heartbeat.interval.ms": "16000"}):
        with pytest.raises(ConfigError):
            apply_group_configs(base, bad)
