"""Values of settings that need more than a number or a word: listeners, the storage URL, per-host limits, cleanup
policies, and Java .properties files (coordinator/config.py reads them)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from storage.pg import url as storage_url


class ConfigError(ValueError):
    """A setting has a bad value; the message names the setting."""


def parse_storage_url(text: str) -> str:
    """Empty (local mode) or a libpq URI with one host or several (cluster mode); storage/pg/url.py says what
    a node accepts. Errors never quote the URL: it may carry a password."""
    value = text.strip()
    if value:
        storage_url.parse(value)
    return value


def parse_cleanup_policy(text: str) -> str:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or any(p not in ("delete", "compact") for p in parts):
        raise ValueError(f"{text!r} is not a list of delete, compact")
    return ",".join(parts)


class HostLimit(NamedTuple):
    host: str
    limit: int

    def __str__(self) -> str:
        return f"{self.host}:{self.limit}"


def _host_limits(text: str) -> tuple[HostLimit, ...]:
    """Kafka's `host:count,host:count` map (max.connections.per.ip.overrides)."""
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        host = host.strip().strip("[]")
        if not sep or not host:
            raise ValueError(f"{item!r} is not host:count")
        out.append(HostLimit(host, _int(0, 2**31 - 1)(count)))
    return tuple(out)


def _int(low: int, high: int = 2**63 - 1) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise ValueError(f"{value} is outside [{low}, {high}]")
        return value

    return parse


def parse_group_int(name: str, text: str) -> int:
    """An INT group config (GroupConfig's ConfigDef type INT, at least 1); ConfigError as Kafka words it."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {name}: Not a number of type INT") from None
    if not -2**31 <= value < 2**31:
        raise ConfigError(f"Invalid value {text} for configuration {name}: Not a number of type INT")
    if value < 1:
        raise ConfigError(f"Invalid value {value} for configuration {name}: Value must be at least 1")
    return value


def bound_config(name: str, value: int, low_name: str, low: int, high_name: str, high: int) -> None:
    """A group config inside the broker's min/max settings (GroupConfig.validateValues)."""
    if value < low:
        raise ConfigError(f"{name} must be greater than or equal to {low_name} ({low}): {value}")
    if value > high:
        raise ConfigError(f"{name} must be less than or equal to {high_name} ({high}): {value}")


def bounded_group_int(name: str, text: str, low_name: str, low: int, high_name: str, high: int) -> int:
    """An INT group config within the broker's min/max settings."""
    value = parse_group_int(name, text)
    bound_config(name, value, low_name, low, high_name, high)
    return value


def read_properties(path: str) -> dict[str, str]:
    """A Java .properties file: `key=value` or `key: value`, # and ! comments, \\ continuations."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError(f"properties file {path}: {exc.strerror}") from None
    result: dict[str, str] = {}
    logical = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            logical += stripped[:-1]
            continue
        logical += stripped
        match = re.match(r"^((?:\\.|[^=:\s])+)\s*[=:\s]\s*(.*)$", logical)
        if match:
            result[match[1].replace("\\", "")] = match[2]
        else:
            result[logical] = ""
        logical = ""
    return result


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if value.upper() in choices:
            return value.upper()
        raise ValueError(f"{text!r} is not one of {', '.join(choices)}")

    return parse


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


_LISTENER = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)://(?P<host>\[[^\]]*\]|[^:/\[\]]*):(?P<port>\d+)$")


_HTTP_LISTENER = re.compile(r"^http://(?P<host>\[[^\]]*\]|[^:/\[\]]*):(?P<port>\d+)/?$")


def parse_http_listener(value: str) -> Listener | None:
    """http.listener: http://host:port (port 0: ephemeral), or empty for none."""
    if not value.strip():
        return None
    match = _HTTP_LISTENER.match(value.strip())
    if not match or int(match["port"]) > 65535:
        raise ValueError(f"{value!r} is not http://host:port")
    return Listener("http", match["host"].strip("[]"), int(match["port"]))


def parse_listeners(value: str) -> tuple[Listener, ...]:
    listeners = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = _LISTENER.match(item)
        if not match:
            raise ValueError(f"{item!r} is not NAME://host:port")
        name, host, port = match["name"].upper(), match["host"].strip("[]"), int(match["port"])
        if port > 65535:
            raise ValueError(f"port {port} is out of range")
        listeners.append(Listener(name, host, port))
    if not listeners:
        raise ValueError("at least one listener is required")
    if len({listener.name for listener in listeners}) != len(listeners):
        raise ValueError("each listener name may appear once")
    return tuple(listeners)
