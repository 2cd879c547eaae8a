"""Start the real server process on an ephemeral port, for integration tests and benches."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ServerProcess:
    """A running `python -m coordinator serve`; its stderr JSON log is collected in `lines`."""

    process: subprocess.Popen
    host: str
    port: int
    log_dir: str
    lines: list[str] = field(default_factory=list)

    advertised: str = ""  # every listener, NAME://host:port,... as the server logged them

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def port_of(self, listener: str) -> int:
        """The bound port of the listener named `listener`."""
        for item in self.advertised.split(","):
            name, _, address = item.partition("://")
            if name == listener:
                return int(address.rsplit(":", 1)[1])
        raise KeyError(f"no listener {listener} in {self.advertised!r}")

    def events(self, name: str | None = None) -> list[dict]:
        out = []
        for line in list(self.lines):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if name is None or event.get("event") == name:
                out.append(event)
        return out

    def wait_for_event(self, name: str, timeout: float = 10.0, where: Callable[[dict], bool] | None = None,
                       **fields: object) -> dict:
        """The first `name` event with these fields (and matching `where`), waiting for the log reader.

        A line the server wrote before the client saw its effect (an answer, a closed socket) may not have been
        read from the pipe yet: assert on events through this, not through a bare events() read."""
        return self.wait_for_events(name, 1, timeout, where, **fields)[0]

    def wait_for_events(self, name: str, count: int, timeout: float = 10.0,
                        where: Callable[[dict], bool] | None = None, **fields: object) -> list[dict]:
        """All `name` events with these fields (and matching `where`) once there are at least `count`."""
        deadline = time.monotonic() + timeout
        while True:
            found = [event for event in self.events(name)
                     if all(event.get(k) == v for k, v in fields.items()) and (where is None or where(event))]
            if len(found) >= count:
                return found
            if time.monotonic() >= deadline:
                raise AssertionError(f"{len(found)} of {count} {name!r} events with {fields} in {timeout}s; "
                                     f"log tail: {self.lines[-5:]}")
            time.sleep(0.02)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start_server(log_dir: str | None = None, overrides: dict[str, str] | None = None,
                 properties_file: str | None = None, env: dict[str, str] | None = None,
                 timeout: float = 20.0, rlimits: dict[int, int] | None = None,
                 topics: dict[str, int] | None = None) -> ServerProcess:
    """`topics` (name -> partition count) are created once it listens (kept if they exist: a restart
    over the same log dir); a commit to a topic the server does not know is refused, as in Kafka.
    `rlimits` maps resource.RLIMIT_* to a soft and hard limit set in the child before it runs
    (as `prlimit` would): e.g. {resource.RLIMIT_AS: 3 << 30} for a container-like memory limit."""
    log_dir = log_dir or tempfile.mkdtemp(prefix="coordinator-test-")
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": log_dir, **(overrides or {})}
    args = [sys.executable, "-m", "coordinator", "serve"]
    if properties_file:
        args.append(properties_file)
    for name, value in settings.items():
        args += ["--override", f"{name}={value}"]
    process = subprocess.Popen(
        args, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env={**os.environ, **(env or {})},
        preexec_fn=(lambda: _set_rlimits(rlimits)) if rlimits else None,
    )
    lines: list[str] = []
    ready = threading.Event()
    found: dict = {}

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if not ready.is_set():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == "listening":
                    found.update(event)
                    ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(timeout) or not found:
        process.kill()
        process.wait()
        raise RuntimeError(f"server did not start: {lines[-20:]}")
    server = ServerProcess(process, found["host"], found["port"], log_dir, lines, found.get("advertised", ""))
    if topics:
        try:
            create_topics(server.host, server.port, topics)
        except BaseException:  # the caller never gets the server to stop: stop it here
            server.kill()
            raise
    return server


def create_topics(host: str, port: int, topics: dict[str, int]) -> None:
    """CreateTopics v7 for `topics` (name -> partition count); one that exists already is fine."""
    import datetime

    from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest

    from tests.support.wire_client import WireClient

    with WireClient(host, port) as client:
        response = client.call(CreateTopicsRequest(
            topics=tuple(CreatableTopic(name=name, num_partitions=count, replication_factor=1, assignments=(),
                                        configs=()) for name, count in topics.items()),
            timeout=datetime.timedelta(seconds=10), validate_only=False))
    for topic in response.topics:
        assert topic.error_code in (0, 36), topic  # NONE, TOPIC_ALREADY_EXISTS


def _set_rlimits(rlimits: dict[int, int]) -> None:
    for which, value in rlimits.items():
        resource.setrlimit(which, (value, value))
