"""Values of settings that need more than a number or a word: the storage URL, per-host limits, cleanup
policies, and Java .properties files (coordinator/config.py reads them)."""

from __future__ import annotations

import re
from collections.abc import Callable
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
