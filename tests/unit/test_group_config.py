"""The group.* settings: defaults, ranges, and min <= max checked at load."""

from __future__ import annotations

import pytest

from coordinator.config import Config, ConfigError
from coordinator.groups.settings import GroupSettings


def load(**overrides: str) -> Config:
    return Config.load(overrides={"log.dirs": "/unused", **overrides}, environ={})


def test_defaults_are_kafkas():
    config = load()
    assert (config.group_min_session_timeout_ms, config.group_max_session_timeout_ms,
            config.group_initial_rebalance_delay_ms, config.group_max_size) == (6000, 1800000, 3000, 2**31 - 1)
    settings = GroupSettings.from_config(config)
    assert settings.offsets_partitions == 50 and settings.new_member_join_timeout_ms == 300000


def test_min_above_max_is_one_line_naming_the_setting():
    with pytest.raises(ConfigError, match=r"^group.max.session.timeout.ms: .*group.min.session.timeout.ms"):
        load(**{"group.min.session.timeout.ms": "10000", "group.max.session.timeout.ms": "9000"})


@pytest.mark.parametrize("name,value", [("group.max.size", "0"), ("group.initial.rebalance.delay.ms", "-1"),
                                        ("group.min.session.timeout.ms", "-5")])
def test_out_of_range_values_are_rejected(name, value):
    with pytest.raises(ConfigError, match=f"^{name}: "):
        load(**{name: value})
