"""DescribeConfigs' entries for a topic and for this broker, as Kafka's ConfigHelper builds them.

A topic lists every topic config (topic_config_defs.py): its override (source
DYNAMIC_TOPIC_CONFIG) or the broker setting that supplies the default (STATIC_BROKER_CONFIG
when the properties file, environment or an override set it, else DEFAULT_CONFIG), or
Kafka's default. Synonyms, when asked for, list the override and then the broker settings,
most specific first, static before default (ConfigHelper.configSynonyms).

The broker lists this server's settings (coordinator/config.py SETTINGS) under their Kafka
names. None can be changed at runtime here, so every one is read_only. storage.url may carry
a password: it is a PASSWORD, sensitive, and its value is always null.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.config import SETTINGS, Config
from coordinator.data_plane.topic_config_defs import TOPIC_CONFIG_DEFS, ConfigType

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


def broker_synonyms(name: str, config: Config) -> list[dict]:
    """ConfigHelper.configSynonyms for a broker setting (or a topic config's broker synonyms):
    the set ones (STATIC_BROKER_CONFIG) first, then those with a default (DEFAULT_CONFIG)."""
    names = next((group[group.index(name):] for group in _BROKER_SYNONYMS if name in group), (name,))
    return synonym_list(names, config)


def synonym_list(names: tuple[str, ...], config: Config) -> list[dict]:
    known = [n for n in names if n in SETTINGS]
    static = [{"name": n, "value": broker_value(n, config), "source": STATIC_BROKER_CONFIG}
              for n in known if n in config.explicit]
    default = [{"name": n, "value": broker_value(n, config), "source": DEFAULT_CONFIG}
               for n in known if n not in config.explicit and getattr(config, SETTINGS[n][0]) is not None]
    return static + default


def entry(name: str, value: str | None, source: int, kind: ConfigType, *, read_only: bool, sensitive: bool,
          synonyms: list[dict], doc: str | None) -> dict:
    return {"name": name, "value": None if sensitive else value, "read_only": read_only, "config_source": source,
            "is_sensitive": sensitive, "synonyms": synonyms, "config_type": int(kind), "documentation": doc}


def wanted(names: tuple[str, ...] | None, all_names: list[str]) -> list[str]:
    """configuration_keys: null or empty = all; unknown names are left out, as Kafka."""
    return all_names if not names else [n for n in all_names if n in set(names)]


def topic_entries(overrides: Mapping[str, str], base: Mapping[str, str], config: Config,
                  keys: tuple[str, ...] | None, include_synonyms: bool, include_documentation: bool) -> list[dict]:
    out = []
    for name in wanted(keys, sorted(TOPIC_CONFIG_DEFS)):
        row = TOPIC_CONFIG_DEFS[name]
        synonyms = synonym_list(row.synonyms, config)
        if name in overrides:
            synonyms.insert(0, {"name": name, "value": overrides[name], "source": DYNAMIC_TOPIC_CONFIG})
        source = synonyms[0]["source"] if synonyms else DEFAULT_CONFIG
        out.append(entry(name, overrides.get(name, base[name]), source, row.type, read_only=False, sensitive=False,
                         synonyms=synonyms if include_synonyms else [],
                         doc=row.doc if include_documentation else None))
    return out


def broker_entries(config: Config, keys: tuple[str, ...] | None, include_synonyms: bool,
                   include_documentation: bool) -> list[dict]:
    out = []
    for name in wanted(keys, list(SETTINGS)):
        synonyms = broker_synonyms(name, config)
        source = synonyms[0]["source"] if synonyms else DEFAULT_CONFIG
        out.append(entry(name, broker_value(name, config), source, broker_type(name, config), read_only=True,
                         sensitive=name in SENSITIVE, synonyms=synonyms if include_synonyms else [],
                         doc=SETTINGS[name][3] if include_documentation else None))
    return out
