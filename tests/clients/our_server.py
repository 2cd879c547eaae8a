"""Our server for the real-client tests: one process that can be SIGKILLed and restarted on the same
log.dirs AND the same port, so clients that are still running reconnect to it (a crashed broker that
comes back), plus the server-side views the tests check (log events of every incarnation)."""

from __future__ import annotations

import time

from tests.support.server_process import ServerProcess, start_server

# Kafka's defaults except a shorter initial rebalance delay (3 s in Kafka): three members started at once
# still join one generation, and each group forms 2 s sooner.
OVERRIDES = {"group.initial.rebalance.delay.ms": "1000"}


class RestartableServer:
    def __init__(self, log_dir: str, overrides: dict[str, str] | None = None) -> None:
        self.log_dir = log_dir
        self.overrides = {**OVERRIDES, **(overrides or {})}
        self.past: list[ServerProcess] = []
        self.current: ServerProcess = start_server(log_dir, overrides=self.overrides)

    @property
    def bootstrap(self) -> str:
        return self.current.bootstrap

    def crash_and_restart(self) -> None:
        """SIGKILL (no flush, no goodbye), then start again on the same log.dirs and the port the first
        incarnation bound (port 0 would pick a new one and strand the running clients)."""
        port = self.current.port
        self.current.kill()
        self.past.append(self.current)
        overrides = {**self.overrides, "listeners": f"PLAINTEXT://127.0.0.1:{port}"}
        self.current = start_server(self.log_dir, overrides=overrides)
        assert self.current.port == port, (self.current.port, port)

    def events(self, name: str | None = None, **fields: object) -> list[dict]:
        """Log events of every incarnation, oldest first, whose fields match."""
        out = []
        for process in [*self.past, self.current]:
            out += [e for e in process.events(name) if all(e.get(k) == v for k, v in fields.items())]
        return out

    def wait_for_events(self, name: str, count: int, timeout: float = 10.0, **fields: object) -> list[dict]:
        """events(name, **fields) once there are at least `count` (the log reader may lag the clients)."""
        deadline = time.monotonic() + timeout
        while len(found := self.events(name, **fields)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return found

    def tail(self, lines: int = 15) -> str:
        return "\n  ".join(self.current.lines[-lines:])

    def close(self) -> int:
        code = self.current.stop()
        return code


def _assigned_partitions(data: bytes) -> set[tuple[str, int]]:
    """Topic partitions of a ConsumerProtocolAssignment (any version: version, [topic, [partition]], ...)."""
    import struct

    out: set[tuple[str, int]] = set()
    if not data:
        return out
    at = 2  # int16 version
    (topics,) = struct.unpack_from(">i", data, at)
    at += 4
    for _ in range(max(topics, 0)):
        (size,) = struct.unpack_from(">h", data, at)
        topic = data[at + 2:at + 2 + size].decode()
        at += 2 + size
        (count,) = struct.unpack_from(">i", data, at)
        at += 4
        for partition in struct.unpack_from(f">{count}i", data, at):
            out.add((topic, partition))
        at += 4 * count
    return out


def describe_group(server: ServerProcess, group: str) -> tuple[str, dict[str, set[tuple[str, int]]]]:
    """DescribeGroups v5 over the wire (kio): (state, {instance id or member id: assigned partitions})."""
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
    from kio.schema.errors import ErrorCode

    from tests.support.wire_client import WireClient

    with WireClient(server.host, server.port) as client:
        described = client.call(DescribeGroupsRequest(groups=(group,), include_authorized_operations=False))
    (g,) = described.groups
    assert g.error_code is ErrorCode.none, g.error_code
    return g.group_state, {m.group_instance_id or m.member_id: _assigned_partitions(m.member_assignment)
                           for m in g.members}
