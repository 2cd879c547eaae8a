"""Dynamic broker configs (Kafka's DynamicBrokerConfig with DynamicLogConfig): the log defaults an
operator changes at runtime, cluster-wide (resource name "") or for one node (its node id).

The configs that can change are Kafka's DynamicLogConfig.ReconfigurableConfigs: the first broker
synonym of every topic config (ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS) but
log.message.format.version, e.g. log.retention.ms (not .minutes / .hours), log.retention.bytes,
log.cleanup.policy, log.segment.bytes, message.max.bytes, log.message.timestamp.*. Each is the
default of one topic config, so a topic without an override takes, most specific first: this
node's dynamic value, the cluster-wide dynamic value, the static setting (file, environment,
override), Kafka's default. A change is stored (the store: a JSON file under log.dirs, or
PostgreSQL's kc_broker_configs) and then applied at once to every hosted partition (`rebase`), and
to every topic created later.

Kafka's other dynamic broker configs (broker_config_defs.py: SSL, listener, SASL, connection limits, thread
pools, ...) are stored and described the same way; `watchers` apply those this server can apply live (the
connection limits: net/connection_quotas.py); the others are only kept (docs/DATA_PLANE.md).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import structlog

from coordinator.data_plane import topic_reconfig
from coordinator.data_plane.broker_config_defs import other_dynamic_def
from coordinator.data_plane.file_catalog_store import write_atomically
from coordinator.data_plane.topic_config_defs import TOPIC_CONFIG_DEFS, TopicConfigDef

log = structlog.get_logger(__name__)

CLUSTER_DEFAULT = ""  # the level of the cluster-wide defaults; a node's level is its id as text

# broker config name -> the topic config whose default it is (DynamicLogConfig.ReconfigurableConfigs)
DYNAMIC_LOG_CONFIGS: dict[str, str] = {
    row.synonyms[0]: name for name, row in TOPIC_CONFIG_DEFS.items()
    if row.synonyms and name != "message.format.version"}

Levels = dict[str, dict[str, str]]  # level ("" or a node id) -> config name -> value


def broker_config_def(name: str) -> TopicConfigDef:
    """The type, validator and documentation of a dynamic broker config: a log default's (its topic config's,
    renamed), else one of Kafka's other dynamic configs (broker_config_defs.py). KeyError if it is neither."""
    if name not in DYNAMIC_LOG_CONFIGS:
        row = other_dynamic_def(name)
        if row is None:
            raise KeyError(name)
        return row
    row = TOPIC_CONFIG_DEFS[DYNAMIC_LOG_CONFIGS[name]]
    return TopicConfigDef(name, row.type, row.default, row.validator, row.doc, applied=row.applied)


def is_dynamic(name: str) -> bool:
    """Whether Kafka lets AlterConfigs change the broker config `name` at runtime (DynamicBrokerConfig)."""
    return name in DYNAMIC_LOG_CONFIGS or other_dynamic_def(name) is not None


class DynamicConfigStore(Protocol):
    def preload(self) -> Levels: ...
    async def read(self) -> Levels: ...
    async def write(self, level: str, configs: Mapping[str, str]) -> None: ...


class FileDynamicConfigStore:
    """Local mode: `<log.dirs>/dynamic-broker-configs.json`, rewritten atomically."""

    FILE = "dynamic-broker-configs.json"

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, self.FILE)
        self._levels: Levels = {}

    def preload(self) -> Levels:
        if not os.path.exists(self.path):
            return {}
        with open(self.path, "rb") as handle:
            stored = json.loads(handle.read())
        self._levels = {str(level): dict(configs) for level, configs in stored["levels"].items()}
        return {level: dict(configs) for level, configs in self._levels.items()}

    async def read(self) -> Levels:
        return {level: dict(configs) for level, configs in self._levels.items()}

    async def write(self, level: str, configs: Mapping[str, str]) -> None:
        levels = {**self._levels, level: dict(configs)}
        levels = {name: values for name, values in levels.items() if values}
        body = json.dumps({"version": 1, "levels": levels}, indent=1, sort_keys=True).encode()
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        await asyncio.get_running_loop().run_in_executor(None, write_atomically, self.path, body)
        self._levels = levels


class DynamicBrokerConfigs:
    """The dynamic levels that concern this node (the cluster default and its own), and the topic
    defaults they give over `static_base` (the topic defaults from the static settings)."""

    def __init__(self, node_id: int, store: DynamicConfigStore, static_base: Mapping[str, str]) -> None:
        self.level = str(node_id)
        self.store = store
        self.static_base = dict(static_base)
        self.levels: Levels = store.preload()
        self.on_change: Callable[[dict[str, str]], None] | None = None
        # called after every change of the levels (e.g. the connection limits: net/connection_quotas.py)
        self.watchers: list[Callable[[DynamicBrokerConfigs], None]] = []

    @property
    def cluster(self) -> dict[str, str]:
        return self.levels.get(CLUSTER_DEFAULT, {})

    @property
    def broker(self) -> dict[str, str]:
        return self.levels.get(self.level, {})

    def get(self, level: str) -> dict[str, str]:
        return dict(self.levels.get(level, {}))

    def value(self, name: str) -> str | None:
        """The dynamic value of a broker config in force on this node (its own, else the cluster's)."""
        return self.broker.get(name, self.cluster.get(name))

    def planned_value(self, level: str, configs: Mapping[str, str], name: str) -> str | None:
        """`value(name)` this node would have with `level` set to `configs`."""
        levels = {**self.levels, level: dict(configs)}
        own = levels.get(self.level, {})
        return own[name] if name in own else levels.get(CLUSTER_DEFAULT, {}).get(name)

    def topic_base(self) -> dict[str, str]:
        """Each topic config's default on this node."""
        return self.planned_base(self.level, self.broker)

    def planned_base(self, level: str, configs: Mapping[str, str]) -> dict[str, str]:
        """The topic defaults this node would have with `level` set to `configs`."""
        levels = {**self.levels, level: dict(configs)}
        out = dict(self.static_base)
        for name in (CLUSTER_DEFAULT, self.level):  # the node's own level wins
            out.update({DYNAMIC_LOG_CONFIGS[key]: value for key, value in levels.get(name, {}).items()
                        if key in DYNAMIC_LOG_CONFIGS})
        return out

    async def set(self, level: str, configs: Mapping[str, str]) -> None:
        """Store one level's whole config set, then apply it here (the others: at their refresh)."""
        await self.store.write(level, configs)
        self._replace({**self.levels, level: dict(configs)})

    async def refresh(self) -> None:
        """Read the store again (cluster mode: after a NOTIFY) and apply what changed."""
        self._replace(await self.store.read())

    def _replace(self, levels: Levels) -> None:
        levels = {level: values for level, values in levels.items() if values}
        before = self.topic_base()
        changed = levels != self.levels
        self.levels = levels
        after = self.topic_base()
        if after != before and self.on_change is not None:
            self.on_change(after)
        if changed:
            for watcher in list(self.watchers):
                try:
                    watcher(self)
                except Exception:
                    log.exception("dynamic_config.apply_failed", watcher=getattr(watcher, "__qualname__", "?"))


def rebase(plane: Any, base: Mapping[str, str]) -> None:
    """Give the data plane new topic defaults: its `base_configs` (shared by reference) change in place,
    and every hosted partition resolves its effective config again."""
    plane.base_configs.clear()
    plane.base_configs.update(base)
    for topic in plane.catalog.all():
        if not topic.internal:
            topic_reconfig.apply(plane.partitions, plane.base_configs, topic)


def attach(plane: Any, configs: DynamicBrokerConfigs) -> None:
    """Apply the stored dynamic configs to `plane` now and every change from then on."""
    configs.on_change = lambda base: rebase(plane, base)
    rebase(plane, configs.topic_base())
