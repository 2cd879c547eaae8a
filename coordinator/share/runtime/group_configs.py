"""Group configs (Kafka's GroupConfig, set with IncrementalAlterConfigs on a GROUP resource): the consumer.* and
share.* configs of each group, persisted, and the settings a group runs with (the broker's group.share.* /
group.consumer.* with its configs applied: apply_group_configs and apply_consumer_group_configs, which also check them
against the broker's bounds).

Local mode keeps them in `<log.dirs>/group-configs.json` (FileGroupConfigStore), rewritten atomically before a
change is answered; cluster mode in PostgreSQL (kc_group_configs: coordinator/cluster/group_config_store.py), where
every node reads them again when one changes them (NOTIFY) and at every membership refresh, so that the group's
coordinator applies them whichever node was asked (Kafka keeps them as ConfigRecords of its metadata log).
DescribeConfigs lists every share.* group config: a group's own value (source GROUP_CONFIG) or the broker
setting's (DEFAULT_CONFIG), as Kafka's ConfigHelper does.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from coordinator.config_values import ConfigError
from coordinator.data_plane.file_catalog_store import write_atomically
from coordinator.groups.consumer.config_settings import (
    CONSUMER_GROUP_CONFIG_NAMES,
    ConsumerTiming,
    apply_consumer_group_configs,
)
from coordinator.groups.share.config_settings import GROUP_CONFIG_NAMES, ShareGroupSettings, apply_group_configs

GROUP_CONFIG_SOURCE, DEFAULT_CONFIG_SOURCE = 8, 5  # DescribeConfigs' ConfigSource
INT, STRING = 3, 2  # DescribeConfigs' ConfigType
SET, DELETE = 0, 1  # IncrementalAlterConfigs' operations


#: every group config, in Kafka's GroupConfig order
ALL_NAMES = CONSUMER_GROUP_CONFIG_NAMES + GROUP_CONFIG_NAMES

DOCS = {
    "consumer.session.timeout.ms": "The timeout to detect client failures when using the consumer group protocol.",
    "consumer.heartbeat.interval.ms": "The heartbeat interval given to the members of a consumer group.",
    "share.session.timeout.ms": "The timeout to detect client failures when using the share group protocol.",
    "share.heartbeat.interval.ms": "The heartbeat interval given to the members of a share group.",
    "share.record.lock.duration.ms": "The record acquisition lock duration in milliseconds for share groups.",
    "share.auto.offset.reset": "The strategy to initialize the share-partition start offset: latest, earliest or "
                               "by_duration:<duration>.",
    "share.isolation.level": "Controls how to read records written transactionally: read_committed or "
                             "read_uncommitted.",
}


def _default(settings: ShareGroupSettings, timing: ConsumerTiming, name: str) -> str:
    return str({"consumer.session.timeout.ms": timing.session_timeout_ms,
                "consumer.heartbeat.interval.ms": timing.heartbeat_interval_ms,
                "share.session.timeout.ms": settings.session_timeout_ms,
                "share.heartbeat.interval.ms": settings.heartbeat_interval_ms,
                "share.record.lock.duration.ms": settings.record_lock_duration_ms,
                "share.auto.offset.reset": settings.auto_offset_reset,
                "share.isolation.level": settings.isolation_level}[name])


class GroupConfigStore(Protocol):
    """Where the group configs are kept: `read` gives every group's; `write` makes `group_id`'s `configs` (`every`:
    all groups' after the change)."""

    async def read(self) -> dict[str, dict[str, str]]: ...

    async def write(self, group_id: str, configs: Mapping[str, str], every: Mapping[str, Mapping[str, str]]
                    ) -> None: ...


class FileGroupConfigStore:
    """Local mode: `<log.dirs>/group-configs.json`, rewritten atomically."""

    FILE = "group-configs.json"

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, self.FILE)

    def preload(self) -> dict[str, dict[str, str]]:
        if not os.path.exists(self.path):
            return {}
        with open(self.path, "rb") as handle:
            return {g: dict(c) for g, c in json.loads(handle.read())["groups"].items()}

    async def read(self) -> dict[str, dict[str, str]]:
        return self.preload()

    async def write(self, group_id: str, configs: Mapping[str, str], every: Mapping[str, Mapping[str, str]]
                    ) -> None:
        body = json.dumps({"version": 1, "groups": every}, indent=1, sort_keys=True).encode()
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        await asyncio.get_running_loop().run_in_executor(None, write_atomically, self.path, body)


class GroupConfigs:
    def __init__(self, log_dir: str, base: ShareGroupSettings, timing: ConsumerTiming) -> None:
        local = FileGroupConfigStore(log_dir)
        self.store: GroupConfigStore = local
        self.base = base
        self.timing = timing
        self.groups: dict[str, dict[str, str]] = local.preload()
        self._settings: dict[str, ShareGroupSettings] = {}
        self._timings: dict[str, ConsumerTiming] = {}

    def use(self, store: GroupConfigStore) -> None:
        """Cluster mode: the configs are `store`'s (none until the first `refresh`), not this node's file."""
        self.store = store
        self._replace({})

    async def refresh(self) -> None:
        """Read every group's configs again (another node may have changed them)."""
        self._replace(await self.store.read())

    def _replace(self, groups: dict[str, dict[str, str]]) -> None:
        changed = {g for g in (*groups, *self.groups) if groups.get(g) != self.groups.get(g)}
        self.groups = groups
        for group_id in changed:
            self._settings.pop(group_id, None)
            self._timings.pop(group_id, None)

    def settings_for(self, group_id: str) -> ShareGroupSettings:
        """The settings `group_id` runs with (the broker's when it has no configs, or they no longer fit the
        broker's bounds: a restart with narrower bounds must not stop a group)."""
        return _applied(self._settings, group_id, lambda: apply_group_configs(
            self.base, _share_part(self.groups.get(group_id, {}))), self.base)

    def consumer_timing(self, group_id: str) -> ConsumerTiming:
        """The session timeout and heartbeat interval of consumer group `group_id` (consumer.* configs); read on
        every ConsumerGroupHeartbeat, hence one dict lookup once cached."""
        found = self._timings.get(group_id)
        if found is not None:
            return found
        return _applied(self._timings, group_id, lambda: apply_consumer_group_configs(
            self.timing, _consumer_part(self.groups.get(group_id, {}))), self.timing)

    def changed(self, group_id: str, operations: list[tuple[str, int, str | None]]) -> dict[str, str]:
        """The group's configs after IncrementalAlterConfigs' operations, checked (ConfigError: INVALID_CONFIG);
        nothing changes yet."""
        configs = dict(self.groups.get(group_id, {}))
        for name, op, value in operations:
            if name not in ALL_NAMES:
                raise ConfigError(f"Unknown group config name: {name}")
            if op == SET:
                if value is None:
                    raise ConfigError(f"Null value not supported for : {name}")
                configs[name] = value
            elif op == DELETE:
                configs.pop(name, None)
            else:
                raise ConfigError(f"Can't operate on group config {name}: its type is not LIST.")
        apply_consumer_group_configs(self.timing, _consumer_part(configs))
        apply_group_configs(self.base, _share_part(configs))
        return configs

    async def write(self, group_id: str, configs: Mapping[str, str]) -> None:
        groups = {**self.groups, group_id: dict(configs)}
        groups = {g: c for g, c in groups.items() if c}
        await self.store.write(group_id, dict(configs), groups)
        self._replace(groups)

    def entries(self, group_id: str, keys: tuple[str, ...] | None, documentation: bool) -> list[dict]:
        """DescribeConfigs' entries of a GROUP resource."""
        own = self.groups.get(group_id, {})
        out = []
        for name in ALL_NAMES:
            if keys and name not in keys:
                continue
            value = own.get(name, _default(self.base, self.timing, name))
            numeric = name.endswith(".ms")
            out.append({"name": name, "value": value, "read_only": False,
                        "config_source": GROUP_CONFIG_SOURCE if name in own else DEFAULT_CONFIG_SOURCE,
                        "is_sensitive": False, "synonyms": [], "config_type": INT if numeric else STRING,
                        "documentation": DOCS[name] if documentation else None})
        return out


def _consumer_part(configs: Mapping[str, str]) -> dict[str, str]:
    return {n: v for n, v in configs.items() if n in CONSUMER_GROUP_CONFIG_NAMES}


def _share_part(configs: Mapping[str, str]) -> dict[str, str]:
    return {n: v for n, v in configs.items() if n not in CONSUMER_GROUP_CONFIG_NAMES}


def _applied(cache: dict[str, Any], group_id: str, apply: Callable[[], Any], fallback: Any) -> Any:
    """The group's settings from `cache`, else `apply()` (cached; `fallback` where its configs no longer fit)."""
    found = cache.get(group_id)
    if found is None:
        try:
            found = apply()
        except ConfigError:
            found = fallback
        cache[group_id] = found
    return found
