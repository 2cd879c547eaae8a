"""DescribeConfigs' entries for a topic and for this broker, as Kafka's ConfigHelper builds them.

A topic lists every topic config (topic_config_defs.py): its override (source
DYNAMIC_TOPIC_CONFIG) or the broker config that supplies the default: set dynamically for this
node (DYNAMIC_BROKER_CONFIG) or cluster-wide (DYNAMIC_DEFAULT_BROKER_CONFIG), set by the
properties file, environment or an override (STATIC_BROKER_CONFIG), else DEFAULT_CONFIG), or
Kafka's default. Synonyms, when asked for, list the override and then the broker configs, grouped
by source in that order, most specific name first within a group (ConfigHelper.configSynonyms).

The broker (its node id) lists this server's settings (coordinator/config.py SETTINGS) under
their Kafka names, plus the dynamic broker configs set that are not among them; a dynamic one
(data_plane/broker_configs.py) is not read_only and shows its dynamic value. The resource ""
lists the cluster-wide dynamic configs only (DYNAMIC_DEFAULT_BROKER_CONFIG). storage.url may
carry a password: it is a PASSWORD, sensitive, and its value is always null.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.config import SETTINGS, Config
from coordinator.data_plane.broker_configs import DynamicBrokerConfigs, broker_config_def, is_dynamic
from coordinator.data_plane.topic_config_defs import TOPIC_CONFIG_DEFS, ConfigType
from protocol.build import Fields

DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

SENSITIVE = frozenset({"storage.url"})
# Kafka's ConfigDef types of the broker settings that are not INT, BOOLEAN or STRING
_BROKER_TYPES = {
    "storage.url": ConfigType.PASSWORD, "log.retention.ms": ConfigType.LONG, "log.retention.bytes": ConfigType.LONG,
    "log.retention.check.interval.ms": ConfigType.LONG, "log.flush.interval.ms": ConfigType.LONG,
    "connections.max.idle.ms": ConfigType.LONG, "offsets.retention.check.interval.ms": ConfigType.LONG,
    "offsets.staging.check.interval.ms": ConfigType.LONG, "log.cleanup.policy": ConfigType.LIST,
    "log.dirs": ConfigType.STRING, "listeners": ConfigType.STRING, "advertised.listeners": ConfigType.STRING,
}
_BROKER_SYNONYMS = (("log.retention.ms", "log.retention.minutes", "log.retention.hours"),)
# Broker configs of Kafka 3.9 this server has no setting for, whose topic configs it accepts and ignores: their
# default is listed as the synonym of the topic config's default (DEFAULT_CONFIG), as Kafka lists it
IGNORED_BROKER_DEFAULTS = {"log.message.format.version": "3.0-IV1", "log.message.downconversion.enable": "true"}


def broker_type(name: str, config: Config) -> ConfigType:
    if name in _BROKER_TYPES:
        return _BROKER_TYPES[name]
    value = getattr(config, SETTINGS[name][0])
    if isinstance(value, bool):
        return ConfigType.BOOLEAN
    return ConfigType.INT if isinstance(value, int) else ConfigType.STRING


def broker_value(name: str, config: Config) -> str | None:
    """The setting's text as Kafka shows it; None for an unset optional one (or a sensitive one)."""
    if name in SENSITIVE:
        return None
    value = getattr(config, SETTINGS[name][0])
    if value is None:
        return None
    return config.as_properties()[name]


def broker_synonyms(name: str, config: Config, dynamic: DynamicBrokerConfigs | None = None,
                    per_broker: bool = True) -> list[Fields]:
    """ConfigHelper.configSynonyms for a broker config (or a topic config's broker synonyms)."""
    names = next((group[group.index(name):] for group in _BROKER_SYNONYMS if name in group), (name,))
    return synonym_list(names, config, dynamic, per_broker)


def synonym_list(names: tuple[str, ...], config: Config, dynamic: DynamicBrokerConfigs | None = None,
                 per_broker: bool = True) -> list[Fields]:
    """The set ones: this node's dynamic (unless `per_broker` is False: the cluster default resource),
    the cluster-wide dynamic, the static (STATIC_BROKER_CONFIG), then those with a default (DEFAULT_CONFIG)."""
    out = []
    if dynamic is not None:
        levels = ((dynamic.broker, DYNAMIC_BROKER_CONFIG),) if per_broker else ()
        for values, source in (*levels, (dynamic.cluster, DYNAMIC_DEFAULT_BROKER_CONFIG)):
            out += [{"name": n, "value": None if _sensitive(n) else values[n], "source": source}
                    for n in names if n in values]
    known = [n for n in names if n in SETTINGS]
    out += [{"name": n, "value": broker_value(n, config), "source": STATIC_BROKER_CONFIG}
            for n in known if n in config.explicit]
    out += [{"name": n, "value": broker_value(n, config), "source": DEFAULT_CONFIG}
            for n in known if n not in config.explicit and getattr(config, SETTINGS[n][0]) is not None]
    out += [{"name": n, "value": IGNORED_BROKER_DEFAULTS[n], "source": DEFAULT_CONFIG}
            for n in names if n in IGNORED_BROKER_DEFAULTS]
    return out


def entry(name: str, value: str | None, source: int, kind: ConfigType, *, read_only: bool, sensitive: bool,
          synonyms: list[Fields], doc: str | None) -> Fields:
    return {"name": name, "value": None if sensitive else value, "read_only": read_only, "config_source": source,
            "is_sensitive": sensitive, "synonyms": synonyms, "config_type": int(kind), "documentation": doc}


def wanted(names: tuple[str, ...] | None, all_names: list[str]) -> list[str]:
    """configuration_keys: null or empty = all; unknown names are left out, as Kafka."""
    return all_names if not names else [n for n in all_names if n in set(names)]


def topic_entries(overrides: Mapping[str, str], base: Mapping[str, str], config: Config,
                  keys: tuple[str, ...] | None, include_synonyms: bool, include_documentation: bool,
                  dynamic: DynamicBrokerConfigs | None = None) -> list[Fields]:
    out = []
    for name in wanted(keys, sorted(TOPIC_CONFIG_DEFS)):
        row = TOPIC_CONFIG_DEFS[name]
        synonyms = synonym_list(row.synonyms, config, dynamic)
        if name in overrides:
            synonyms.insert(0, {"name": name, "value": overrides[name], "source": DYNAMIC_TOPIC_CONFIG})
        source = synonyms[0]["source"] if synonyms else DEFAULT_CONFIG
        out.append(entry(name, overrides.get(name, base[name]), source, row.type, read_only=False, sensitive=False,
                         synonyms=synonyms if include_synonyms else [],
                         doc=row.doc if include_documentation else None))
    return out


def _sensitive(name: str) -> bool:
    """storage.url, and the PASSWORD configs set dynamically (keystore and key passwords, JAAS texts): never shown."""
    return name in SENSITIVE or is_dynamic(name) and broker_config_def(name).type is ConfigType.PASSWORD


def _kind_and_doc(name: str, config: Config) -> tuple[ConfigType, str]:
    if name in SETTINGS:
        return broker_type(name, config), SETTINGS[name][3]
    row = broker_config_def(name)
    return row.type, row.doc


def broker_entries(config: Config, keys: tuple[str, ...] | None, include_synonyms: bool,
                   include_documentation: bool, dynamic: DynamicBrokerConfigs | None = None) -> list[Fields]:
    """This node's configs: the settings, then the dynamic configs set that are not settings."""
    extra = [] if dynamic is None else sorted({*dynamic.cluster, *dynamic.broker} - set(SETTINGS))
    out = []
    for name in wanted(keys, list(SETTINGS) + extra):
        synonyms = broker_synonyms(name, config, dynamic)
        source = synonyms[0]["source"] if synonyms else DEFAULT_CONFIG
        own = None if dynamic is None else dynamic.value(name)
        value = own if own is not None else broker_value(name, config)
        kind, doc = _kind_and_doc(name, config)
        out.append(entry(name, value, source, kind, read_only=not is_dynamic(name),
                         sensitive=_sensitive(name), synonyms=synonyms if include_synonyms else [],
                         doc=doc if include_documentation else None))
    return out


def cluster_default_entries(dynamic: DynamicBrokerConfigs, config: Config, keys: tuple[str, ...] | None,
                            include_synonyms: bool, include_documentation: bool) -> list[Fields]:
    """The resource "": the cluster-wide dynamic configs (ConfigHelper, perBrokerConfig = false)."""
    out = []
    for name in wanted(keys, sorted(dynamic.cluster)):
        synonyms = broker_synonyms(name, config, dynamic, per_broker=False)
        kind, doc = _kind_and_doc(name, config)
        out.append(entry(name, dynamic.cluster[name], DYNAMIC_DEFAULT_BROKER_CONFIG, kind,
                         read_only=not is_dynamic(name), sensitive=_sensitive(name),
                         synonyms=synonyms if include_synonyms else [],
                         doc=doc if include_documentation else None))
    return out
