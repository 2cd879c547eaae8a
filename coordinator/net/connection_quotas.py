"""How many connections the server holds: Kafka's `max.connections`, `max.connections.per.ip`
and `max.connections.per.ip.overrides` (ConnectionQuotas in Kafka's SocketServer).

A connection over its address's limit is closed at once, as Kafka does. Kafka's acceptor
stops accepting while the broker-wide limit is reached; asyncio gives no way to pause an
accept loop, so a connection over `max.connections` is closed at once too (the client sees
the same refusal and retries with its reconnect backoff).

The broker-wide limit is also capped by the process's fd limit (RLIMIT_NOFILE): connections
may use at most the part of it not kept for files (`fd_reserve`), so that clients holding
connections can never take the fds the logs need to roll segments or create partitions.

Refusals are logged as warnings, which the logging setup rate-limits per event name.
"""

from __future__ import annotations

import resource
import socket
from collections.abc import Callable
from typing import Any, NamedTuple

import structlog

from coordinator.config import Config, ConfigError
from coordinator.config_values import HostLimit, _host_limits

log = structlog.get_logger(__name__)


def fd_reserve(nofile: int) -> int:
    """Fds kept for files (logs, indexes, the catalog) out of a limit of `nofile`: a quarter,
    but at least 256 (or half of a smaller limit)."""
    return max(nofile // 4, min(256, nofile // 2))


def connection_cap(max_connections: int, nofile: int | None = None, others: int = 0) -> int:
    """`max.connections`, lowered to what RLIMIT_NOFILE leaves after the file reserve and `others` fds
    (the http.listener's connections)."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY or nofile <= 0:
        return max_connections
    return max(0, min(max_connections, nofile - fd_reserve(nofile) - others))


def http_connections(config: Config) -> int:
    """The fds the http.listener may hold (none without one): kept out of the Kafka listeners' cap."""
    return config.http_max_connections if config.http_listener is not None else 0


def resolve_overrides(overrides: tuple) -> dict[str, int]:
    """{address: limit} for `max.connections.per.ip.overrides`; host names are resolved once,
    at start-up, as Kafka does (InetAddress.getByName)."""
    out: dict[str, int] = {}
    for host, limit in overrides:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            raise ConfigError(f"max.connections.per.ip.overrides: cannot resolve {host!r}: {exc}") from None
        for info in infos:
            out[normalize(str(info[4][0]))] = limit
    return out


def normalize(address: str) -> str:
    """An IPv4 peer of a dual-stack socket appears as ::ffff:a.b.c.d; count it as a.b.c.d."""
    if address.startswith("::ffff:") and "." in address:
        return address[7:]
    return address


class Limits(NamedTuple):
    max_connections: int
    per_ip: int
    overrides: tuple[HostLimit, ...]


def connection_limits(config: Config, dynamic_value: Callable[[str], str | None]) -> Limits:
    """The limits in force: each one's dynamic value (AlterConfigs on the broker: data_plane/broker_configs.py)
    over its static setting. ValueError if the overrides do not parse (host:count,...)."""
    total, per_ip = dynamic_value("max.connections"), dynamic_value("max.connections.per.ip")
    overrides = dynamic_value("max.connections.per.ip.overrides")
    return Limits(config.max_connections if total is None else int(total),
                  config.max_connections_per_ip if per_ip is None else int(per_ip),
                  config.max_connections_per_ip_overrides if overrides is None else _host_limits(overrides))


class ConnectionQuotas:
    """The counts of one set of listeners: the Kafka listeners together (`max.connections`), or the
    http.listener (`http.max.connections`, `listener` "http"); `max.connections.per.ip` applies to both."""

    def __init__(self, max_connections: int, per_ip: int, overrides: dict[str, int], *,
                 listener: str = "", total_setting: str = "max.connections, capped by the fd limit") -> None:
        self.max_connections = max_connections
        self.per_ip = per_ip
        self.overrides = overrides
        self.log_fields = {"listener": listener} if listener else {}  # a refusal's: none for the Kafka listeners
        self.total_setting = total_setting  # what a refusal over the total names
        self.total = 0
        self.counts: dict[str, int] = {}

    @classmethod
    def from_config(cls, config: Config) -> ConnectionQuotas:
        """The Kafka listeners' counts; the http.listener's connections are kept out of the fds they may use."""
        http = http_connections(config)
        cap = connection_cap(config.max_connections, others=http)
        if cap < config.max_connections:
            log.info("max.connections capped by the fd limit", configured=config.max_connections,
                     effective=cap, nofile=resource.getrlimit(resource.RLIMIT_NOFILE)[0], http_connections=http)
        return cls(cap, config.max_connections_per_ip, resolve_overrides(config.max_connections_per_ip_overrides))

    def watch(self, config: Config, dynamic: Any) -> None:
        """Apply `dynamic`'s (DynamicBrokerConfigs) connection limits now and at each of its changes, as Kafka's
        SocketServer reconfigures: new connections count against the new limits, none already open is closed."""
        def apply(configs: Any) -> None:
            try:
                self.reconfigure(connection_limits(config, configs.value), http_connections(config))
            except (ConfigError, ValueError) as exc:  # e.g. an override's host no longer resolves: keep the limits
                log.warning("dynamic connection limits not applied", error=str(exc))

        dynamic.watchers.append(apply)
        apply(dynamic)

    def reconfigure(self, limits: Limits, http: int = 0) -> None:
        """New limits for the Kafka listeners; `http` connections are kept out of the fds they may use."""
        cap, overrides = connection_cap(limits.max_connections, others=http), resolve_overrides(limits.overrides)
        if (cap, limits.per_ip, overrides) != (self.max_connections, self.per_ip, self.overrides):
            self.max_connections, self.per_ip, self.overrides = cap, limits.per_ip, overrides
            log.info("connection limits changed", max_connections=cap, max_connections_per_ip=limits.per_ip,
                     overrides=len(overrides))

    @classmethod
    def for_http(cls, config: Config) -> ConnectionQuotas:
        return cls(config.http_max_connections, config.max_connections_per_ip,
                   resolve_overrides(config.max_connections_per_ip_overrides), listener="http",
                   total_setting="http.max.connections")

    def limit_for(self, address: str) -> int:
        return self.overrides.get(address, self.per_ip)

    def admit(self, address: str) -> bool:
        """Count a new connection from `address`, or refuse it (False, logged) over a limit."""
        address = normalize(address)
        count = self.counts.get(address, 0)
        if count >= self.limit_for(address):
            self._refuse(address, f"the address already has the maximum of {self.limit_for(address)} connections "
                                  "(max.connections.per.ip)")
            return False
        if self.total >= self.max_connections:
            self._refuse(address, f"the server already has the maximum of {self.max_connections} connections "
                                  f"({self.total_setting})")
            return False
        self.counts[address] = count + 1
        self.total += 1
        return True

    def release(self, address: str) -> None:
        address = normalize(address)
        count = self.counts.get(address, 0) - 1
        if count > 0:
            self.counts[address] = count
        else:
            self.counts.pop(address, None)
        self.total -= 1

    def _refuse(self, address: str, reason: str) -> None:
        log.warning("connection refused", peer=address, reason=reason, **self.log_fields)
