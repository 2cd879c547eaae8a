"""group.consumer.migration.policy: Kafka's ConsumerGroupMigrationPolicy (bidirectional by default, any case)."""

import pytest

from coordinator.config import Config, ConfigError
from coordinator.groups.settings import GroupSettings


def settings(**overrides: str):
    return GroupSettings.from_config(Config.load(environ={}, overrides=overrides)).consumer


def test_default_is_bidirectional():
    consumer = settings()
    assert consumer.migration_policy == "bidirectional"
    assert consumer.upgrade_enabled and consumer.downgrade_enabled


@pytest.mark.parametrize("value, upgrade, downgrade", [
    ("UPGRADE", True, False), ("Downgrade", False, True), ("disabled", False, False), ("BiDirectional", True, True)])
def test_policies_any_case(value, upgrade, downgrade):
    consumer = settings(**{"group.consumer.migration.policy": value})
    assert (consumer.upgrade_enabled, consumer.downgrade_enabled) == (upgrade, downgrade)


@pytest.mark.parametrize("value", ["both", "", " upgrade"])
def test_unknown_policy_is_refused(value):
    with pytest.raises(ConfigError, match="group.consumer.migration.policy"):
        settings(**{"group.consumer.migration.policy": value})
