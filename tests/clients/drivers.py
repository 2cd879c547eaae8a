"""Start any real client as a group consumer with the same Python call: `run_consumer(client, ...)`.

Every driver takes the same flags and prints the same line protocol (docs/CLIENTS.md), so one
scenario runs against every client. Each uses the client's DEFAULT settings except bootstrap
servers, group id, auto offset reset = earliest, and what the scenario passes here: static
membership, assignor, session timeout, commit mode, or raw client settings (`extra`).
"""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass

from tests.clients import tools
from tests.clients.process import ClientProcess


class ClientUnsupported(Exception):
    """The client cannot do what the scenario asks (e.g. kafkajs has no static membership)."""


@dataclass(frozen=True)
class Client:
    name: str
    static_membership: bool
    assignors: frozenset[str]
    explicit_commit: bool  # False: "commit=True" means the client's own auto-commit (kcat)


CLIENTS: dict[str, Client] = {c.name: c for c in (
    Client("java", True, frozenset({"range", "roundrobin", "sticky", "cooperative-sticky"}), True),
    Client("confluent", True, frozenset({"range", "roundrobin", "cooperative-sticky"}), True),
    Client("kafka-python", True, frozenset({"range", "roundrobin", "sticky", "cooperative-sticky"}), True),
    Client("aiokafka", True, frozenset({"range", "roundrobin", "sticky"}), True),
    Client("kafkajs", False, frozenset({"roundrobin"}), True),
    Client("kcat", True, frozenset({"range", "roundrobin", "cooperative-sticky"}), False),
)}

_serial = itertools.count(1)


def _command(client: str) -> tuple[list[str], dict[str, str]]:
    here = tools.HERE
    if client == "java":
        return (["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", tools.java_classpath(),
                 "GroupConsumer"], {})
    if client == "kafkajs":
        return ["node", str(here / "node" / "group_consumer.js")], {"KAFKAJS_PREFIX": str(tools.NODE_PREFIX)}
    if client == "kcat":
        return [sys.executable, str(here / "kcat_consumer.py")], {}
    return [sys.executable, str(here / "py_consumer.py"), client], {}


def run_consumer(client: str, bootstrap: str, group: str, topic: str | list[str], *, instance_id: str | None = None,
                 count: int | None = None, commit: bool | str = True, assignor: str | None = None,
                 session_timeout_ms: int | None = None, extra: dict[str, object] | None = None,
                 name: str | None = None) -> ClientProcess:
    """Start `client` as a member of `group` subscribed to `topic`; returns the running ClientProcess.

    commit: True = auto-commit off, commit synchronously after every poll/batch, on revoke and on
    SIGTERM (kcat: librdkafka's auto-commit, see CLIENTS[..].explicit_commit); False = never commit;
    "auto" = the client's own auto-commit. count: exit by itself after that many records.
    extra: raw settings in the client's own names (Java/librdkafka properties, kafka-python/aiokafka
    keyword arguments, kafkajs consumer options). Raises ClientUnsupported for what a client lacks;
    fails (CI) or skips (locally) when the client is not installed.
    """
    spec = CLIENTS[client]
    if instance_id is not None and not spec.static_membership:
        raise ClientUnsupported(f"{client} has no static membership (group.instance.id)")
    if assignor is not None and assignor not in spec.assignors:
        raise ClientUnsupported(f"{client} has no {assignor!r} assignor (has {sorted(spec.assignors)})")
    tools.require(client)
    mode = {True: "explicit", False: "none", "auto": "auto"}[commit]
    cmd, env = _command(client)
    cmd += ["--bootstrap", bootstrap, "--group", group, "--commit", mode]
    for t in [topic] if isinstance(topic, str) else topic:
        cmd += ["--topic", t]
    if instance_id is not None:
        cmd += ["--instance-id", instance_id]
    if count is not None:
        cmd += ["--count", str(count)]
    if assignor is not None:
        cmd += ["--assignor", assignor]
    if session_timeout_ms is not None:
        cmd += ["--session-timeout-ms", str(session_timeout_ms)]
    for key, value in (extra or {}).items():
        cmd += ["--set", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    return ClientProcess(name or f"{client}#{next(_serial)}", cmd, env=env)

