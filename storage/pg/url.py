"""The storage URL: libpq's URI form, with one host or several (`postgresql://u:pw@h1:5432,h2:5432/db?
target_session_attrs=read-write`, the standard way to reach whichever PostgreSQL is primary after a failover).

`parse` checks what a node needs of it, names its hosts (connect.py tries them in order, as libpq does) and reads
the options libpq applies on the client side (connect_timeout, the TCP keepalive settings and tcp_user_timeout, which
asyncpg would otherwise send to the server as settings); `redact` hides its password in log lines. No driver
import, so the settings can use it in local mode too.
No message here quotes the URL: it may carry a password.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

SCHEMES = ("postgresql", "postgres")
#: libpq's target_session_attrs values; a node writes, so only these two pick a server it can use
SESSION_ATTRS = ("any", "read-write", "read-only", "primary", "standby", "prefer-standby")
WRITABLE_SESSION_ATTRS = ("read-write", "primary")
DEFAULT_CONNECT_TIMEOUT_S = 10.0  # per host, when the URL sets no connect_timeout
MIN_CONNECT_TIMEOUT_S = 2.0  # libpq's floor for connect_timeout
# libpq's TCP settings, applied to each connection's socket; 0 in the URL: the operating system's default. Ours
# when the URL sets none (libpq's are the OS's: a peer gone without a reset is noticed after 2 h idle, or some 15
# min with data unacknowledged): a connection silent for 5 s while idle (keepalive probes after 2 s, one a second,
# 3 unanswered) or with data unacknowledged for 5 s is ended by the kernel.
DEFAULT_KEEPALIVES_IDLE_S = 2
DEFAULT_KEEPALIVES_INTERVAL_S = 1
DEFAULT_KEEPALIVES_COUNT = 3
DEFAULT_TCP_USER_TIMEOUT_MS = 5000
#: the URL parameters that are libpq's client-side options: read here, never handed to asyncpg
CLIENT_PARAMETERS = ("connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
                     "tcp_user_timeout")
FORM = "postgresql://user:password@host:port[,host:port...]/database[?target_session_attrs=read-write]"

_PASSWORD_PARAMETER = re.compile(r"(password=)([^&\s]*)", re.IGNORECASE)
_IPV6 = re.compile(r"\[([^\]]+)\](?::(.*))?$")


class Host(NamedTuple):
    host: str  # a name, an address, or a Unix-socket directory (starts with /)
    port: int | None  # None: the driver's default (PGPORT, else 5432)


class TcpOptions(NamedTuple):
    """What a TCP connection's socket is set to (connect.py); a value of 0: the operating system's default."""

    keepalives: bool  # SO_KEEPALIVE
    keepalives_idle_s: int  # TCP_KEEPIDLE
    keepalives_interval_s: int  # TCP_KEEPINTVL
    keepalives_count: int  # TCP_KEEPCNT
    tcp_user_timeout_ms: int  # TCP_USER_TIMEOUT


class StorageUrl(NamedTuple):
    hosts: tuple[Host, ...]  # in the URL's order; empty: the driver's default host
    target_session_attrs: str  # libpq's default "any"
    connect_timeout_s: float | None  # per host; None: no limit of its own (the caller's applies)
    tcp: TcpOptions
    driver_url: str  # the URL as the driver is given it (without CLIENT_PARAMETERS, which asyncpg lacks)


def parse(url: str) -> StorageUrl:
    """The URL's hosts and connection options; ValueError (never quoting the URL) when it is not a
    libpq URI a node can use."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError(f"is not a URL {FORM}") from None
    if parts.scheme not in SCHEMES:
        raise ValueError(f"scheme {parts.scheme or '(none)'!r} is not one of {', '.join(SCHEMES)}")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    hosts = _hosts(parts.netloc.rpartition("@")[2], query)
    attrs = query.get("target_session_attrs", "any")
    if attrs not in SESSION_ATTRS:
        raise ValueError(f"target_session_attrs={attrs!r} is not one of {', '.join(SESSION_ATTRS)}")
    if attrs not in WRITABLE_SESSION_ATTRS and attrs != "any":
        raise ValueError(f"target_session_attrs={attrs} picks a PostgreSQL that cannot write; a node writes: "
                         "give read-write (or primary)")
    if attrs == "any" and len(hosts) > 1:
        raise ValueError("lists several hosts without target_session_attrs=read-write (or primary): a node "
                         "must reach the one PostgreSQL that can write, not the first that answers")
    timeout = _connect_timeout(query.get("connect_timeout"))
    tcp = TcpOptions(_whole(query, "keepalives", 1, 2**31 - 1) != 0,  # libpq: any other number than 0 is on
                     _whole(query, "keepalives_idle", DEFAULT_KEEPALIVES_IDLE_S, 32767),
                     _whole(query, "keepalives_interval", DEFAULT_KEEPALIVES_INTERVAL_S, 32767),
                     _whole(query, "keepalives_count", DEFAULT_KEEPALIVES_COUNT, 127),
                     _whole(query, "tcp_user_timeout", DEFAULT_TCP_USER_TIMEOUT_MS, 2**31 - 1))
    driver_url = url
    if any(name in query for name in CLIENT_PARAMETERS):
        base, _, params = url.partition("?")
        kept = "&".join(item for item in params.split("&") if item.partition("=")[0] not in CLIENT_PARAMETERS)
        driver_url = f"{base}?{kept}" if kept else base
    return StorageUrl(hosts, attrs, timeout, tcp, driver_url)


def _whole(query: dict[str, str], name: str, default: int, most: int) -> int:
    """A parameter that is a whole number up to `most` (Linux's limit for the socket option), else `default`."""
    text = query.get(name)
    if text is None:
        return default
    if not text.isdigit() or int(text) > most:
        raise ValueError(f"has a {name} that is not a whole number from 0 to {most}")
    return int(text)


def _hosts(hostlist: str, query: dict[str, str]) -> tuple[Host, ...]:
    """The netloc's host list (else the `host` parameter's), each with its port (else the `port` parameter's:
    one for all, or one per host)."""
    specs = hostlist.split(",") if hostlist else [h for h in query.get("host", "").split(",") if h]
    if hostlist and any(not spec for spec in specs):
        raise ValueError("has an empty entry in its host list")
    names: list[str] = []
    ports: list[int | None] = []
    for spec in specs:
        if spec.startswith("["):
            match = _IPV6.match(spec)
            if match is None:
                raise ValueError("has an IPv6 address without its closing ']'")
            name, port = match.group(1), match.group(2) or ""
        elif spec.startswith("/"):
            name, port = spec, ""
        else:
            name, _, port = spec.partition(":")
        names.append(unquote(name))
        ports.append(_port(unquote(port)) if port else None)
    default = [_port(p) for p in query["port"].split(",")] if query.get("port") else []
    if len(default) > 1 and len(default) != len(names):
        raise ValueError(f"gives {len(default)} ports in its port parameter for {len(names)} host(s)")
    return tuple(Host(name, port if port is not None else (default[i] if len(default) > 1 else
                                                           default[0] if default else None))
                 for i, (name, port) in enumerate(zip(names, ports)))


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError("has a port that is not a number from 1 to 65535")
    return int(text)


def _connect_timeout(text: str | None) -> float | None:
    """libpq's connect_timeout: seconds per host; 0 or less: none; at least 2."""
    if text is None:
        return DEFAULT_CONNECT_TIMEOUT_S
    try:
        seconds = int(text)
    except ValueError:
        raise ValueError("has a connect_timeout that is not a whole number of seconds") from None
    return None if seconds <= 0 else max(float(seconds), MIN_CONNECT_TIMEOUT_S)


def passwords(url: str) -> set[str]:
    """Every password the URL carries (in its user part, as a parameter), as written and decoded."""
    found = set()
    userinfo = url.partition("://")[2].partition("/")[0].partition("?")[0].rpartition("@")[0]
    if ":" in userinfo:
        found.add(userinfo.partition(":")[2])
    found.update(match.group(2) for match in _PASSWORD_PARAMETER.finditer(url.partition("?")[2]))
    return {form for secret in found if secret for form in (secret, unquote(secret))}


def redact(url: str) -> str:
    """The URL with any password replaced by '***', for log lines and error messages."""
    scheme, sep, rest = url.partition("://")
    if sep:
        end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
        netloc, tail = rest[:end], rest[end:]
        userinfo, at, hostlist = netloc.rpartition("@")
        if at and ":" in userinfo:
            netloc = f"{userinfo.partition(':')[0]}:***@{hostlist}"
        url = f"{scheme}://{netloc}{tail}"
    return _PASSWORD_PARAMETER.sub(r"\1***", url)


def without_password(text: str, url: str) -> str:
    """`text` with any copy of the URL's password replaced by '***' (driver messages may quote it)."""
    for secret in sorted(passwords(url), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def argument(text: str) -> str:
    """argparse's `type` for a tool's --storage-url: the URL, or an error that does not quote it (argparse's own
    message for a ValueError would)."""
    import argparse

    if not text:  # (argparse applies `type` to a string default too)
        return text
    try:
        parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
