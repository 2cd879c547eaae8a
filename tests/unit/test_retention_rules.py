"""Retention decisions (storage/retention_rules.py) with a fake clock, and the settings that feed them."""

from __future__ import annotations

import pytest

from coordinator.config import Config, ConfigError
from coordinator.data_plane.topic_configs import EffectiveConfig, defaults
from storage.retention_rules import RetentionPolicy, SegmentInfo, plan

DAY = 86_400_000
NOW = 100 * DAY


def segs(*specs: tuple[int, int, int]) -> list[SegmentInfo]:
    """(base offset, size, largest timestamp) per segment; the last one is the active segment."""
    return [SegmentInfo(*spec) for spec in specs]


LOG = segs((0, 100, NOW - 9 * DAY), (10, 100, NOW - 8 * DAY), (20, 100, NOW - 2 * DAY), (30, 100, NOW - 9 * DAY))


def decide(segments=LOG, *, ms=-1, size=-1, delete=True, lso=0, hw=40, leo=40):
    return plan(segments, RetentionPolicy(ms, size, delete), now_ms=NOW, log_start_offset=lso, high_watermark=hw,
                log_end_offset=leo)


def test_time_retention_deletes_the_prefix_older_than_retention_ms():
    assert decide(ms=7 * DAY).count == 2
    assert decide(ms=7 * DAY).reasons == (f"retention time {7 * DAY}ms breach",)
    assert decide(ms=3 * DAY).count == 2  # stops at segment 2, whatever comes after it
    assert decide(ms=10 * DAY).count == 0
    assert decide(ms=-1).count == 0  # -1: no time limit


def test_time_retention_stops_at_the_first_young_segment():
    young_first = segs((0, 100, NOW), (10, 100, NOW - 9 * DAY), (20, 0, 0))
    assert decide(young_first, ms=DAY).count == 0


def test_time_is_strictly_greater_than_retention_ms():
    edge = segs((0, 100, NOW - DAY), (10, 0, 0))
    assert decide(edge, ms=DAY).count == 0
    assert decide(edge, ms=DAY - 1).count == 1


def test_size_retention_deletes_oldest_while_the_rest_stays_at_least_retention_bytes():
    assert decide(size=250).count == 1  # 400 -> 300 >= 250; deleting another would leave 200
    assert decide(size=200).count == 2
    assert decide(size=0).count == 4  # the active segment too: the log rolls, then deletes them all
    assert decide(size=1).count == 3  # deleting the active segment would leave 0 < 1
    assert decide(size=400).count == 0
    assert decide(size=401).count == 0
    assert decide(size=250).reasons == ("retention size in bytes 250 breach",)


def test_time_then_size_are_applied_one_after_the_other():
    result = decide(ms=8 * DAY + 1, size=150)  # time takes segment 0; size then looks at the 300 left
    assert result.count == 2
    assert len(result.reasons) == 2


def test_nothing_at_or_above_the_high_watermark_is_deleted():
    assert decide(ms=DAY, hw=20).count == 2  # segment 2's successor starts at 30 > hw
    assert decide(ms=DAY, hw=9).count == 0


def test_an_expired_active_segment_goes_once_the_high_watermark_reached_the_log_end():
    everything_old = segs((0, 100, NOW - 9 * DAY), (10, 100, NOW - 9 * DAY))
    assert decide(everything_old, ms=DAY, hw=20, leo=20).count == 2
    assert decide(everything_old, ms=DAY, hw=19, leo=20).count == 1  # offset 19 is not durable yet
    assert decide(everything_old, ms=DAY, hw=20, leo=21).count == 1  # an append in flight
    assert decide(LOG, ms=DAY).count == 4
    assert decide(LOG, ms=DAY, hw=39).count == 3
    young_active = segs((0, 100, NOW - 9 * DAY), (10, 100, NOW))
    assert decide(young_active, ms=DAY, hw=20, leo=20).count == 1


def test_an_empty_last_segment_is_never_deleted():
    rolled = segs((0, 100, NOW - 9 * DAY), (10, 0, -1))  # after a roll, or a new partition
    assert decide(rolled, ms=0, size=0, lso=10, hw=10, leo=10).count == 1
    assert decide(segs((10, 0, -1)), ms=0, size=0, lso=10, hw=10, leo=10).count == 0
    assert decide(segs((10, 0, NOW - 9 * DAY)), ms=0, hw=10, leo=10).count == 0


def test_the_log_start_offset_alone_never_takes_the_active_segment():
    result = decide(lso=40)  # DeleteRecords up to the log end: the active segment has no successor
    assert result.count == 3 and result.reasons == ("log start offset 40 breach",)


def test_compact_only_policy_keeps_time_and_size_off_but_not_the_log_start_offset():
    assert decide(ms=DAY, size=0, delete=False).count == 0
    result = decide(delete=False, lso=25)
    assert result.count == 2 and result.reasons == ("log start offset 25 breach",)


def test_log_start_offset_breach_needs_the_next_segment_to_start_at_or_below_it():
    assert decide(lso=19).count == 1
    assert decide(lso=20).count == 2
    assert decide(lso=30).count == 3


def test_empty_log_and_single_segment():
    assert decide(segs((0, 0, -1)), ms=0, size=0, lso=0, hw=0, leo=0).count == 0
    assert decide(segs((0, 500, 0)), ms=0, size=0, lso=0, hw=5, leo=5).count == 1
    assert decide(segs((0, 500, 0)), ms=0, size=0, lso=0, hw=4, leo=5).count == 0


@pytest.mark.parametrize("overrides, expected", [
    ({}, 168 * 3_600_000),
    ({"log.retention.hours": "1"}, 3_600_000),
    ({"log.retention.hours": "1", "log.retention.minutes": "2"}, 120_000),
    ({"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, 5),
    ({"log.retention.ms": "-1", "log.retention.minutes": "2"}, -1),
    ({"log.retention.hours": "-5"}, -1),
])
def test_broker_retention_precedence_is_kafkas(tmp_path, overrides, expected):
    config = Config.load(overrides={"log.dirs": str(tmp_path), **overrides}, environ={})
    assert config.log_retention_time_ms == expected


def test_broker_settings_validation(tmp_path):
    config = Config.load(overrides={"log.dirs": str(tmp_path)}, environ={})
    assert (config.log_retention_bytes, config.log_retention_check_interval_ms, config.log_cleanup_policy) == \
        (-1, 300_000, "delete")
    assert config.as_properties()["log.retention.ms"] == ""
    for name, value in (("log.cleanup.policy", "shred"), ("log.retention.check.interval.ms", "0"),
                        ("log.retention.ms", "soon")):
        with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
            Config.load(overrides={"log.dirs": str(tmp_path), name: value}, environ={})


def test_topic_config_resolves_broker_defaults_and_overrides():
    base = defaults(1 << 30, 1048588, 3_600_000, 1000, "compact")
    assert EffectiveConfig.resolve({}, base).retention == RetentionPolicy(3_600_000, 1000, False)
    assert EffectiveConfig.resolve({"cleanup.policy": "compact,delete", "retention.ms": "-1"}, base).retention == \
        RetentionPolicy(-1, 1000, True)
