"""Shared pieces of the hostile-client tests (docs/SECURITY.md): a server under a container-like
limit, a well-behaved client that keeps asking on its own connection and times every answer, and
offsets committed before an attack that must still be there after it."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from tests.support.offsets import commit_request, fetch_request
from tests.support.server_process import ServerProcess, create_topics, start_server
from tests.support.wire_client import WireClient, request_frame

MEMORY_LIMIT = 3 << 30  # the address space of a container with a 3 GiB limit (RLIMIT_AS, like prlimit --as)
RESPONSIVE_SECONDS = 1.5  # the longest a well-behaved client may wait for an answer while another one attacks
STARTUP_SECONDS = 20.0  # for the well-behaved client's process to start and have its first answer
WATCHDOG_CLIENT = Path(__file__).with_name("watchdog_client.py")


def start_limited_server(log_dir: str | None = None, overrides: dict[str, str] | None = None, *,
                         memory: int = MEMORY_LIMIT, nofile: int | None = None,
                         topics: dict[str, int] | None = None,
                         env: dict[str, str] | None = None) -> ServerProcess:
    """The real server process under RLIMIT_AS = `memory` (and RLIMIT_NOFILE = `nofile` if given),
    with `topics` (name -> partition count) created and `env` added to its environment."""
    rlimits = {resource.RLIMIT_AS: memory}
    if nofile is not None:
        rlimits[resource.RLIMIT_NOFILE] = nofile
    return start_server(log_dir, overrides, rlimits=rlimits, topics=topics, env=env)


@contextmanager
def limited_server_with_commits(log_dir: str, group: str, offsets: dict[tuple[str, int], int],
                                **limits: Any) -> Iterator[ServerProcess]:
    """start_limited_server, with `offsets` committed for `group` before the test attacks it."""
    server = start_limited_server(log_dir, **limits)
    try:
        commit_offsets(server, group, offsets)
        yield server
    finally:
        server.kill()


class Watchdog:
    """A well-behaved client on its own connection, in its own process (tests/support/watchdog_client.py):
    ApiVersions every `interval` seconds, each answer timed there, so that nothing this process does (its
    garbage collector walking the objects of a huge decoded answer held every thread here for up to 0.7 s)
    counts as the server's delay. `check()` fails if any answer took longer than RESPONSIVE_SECONDS, never
    came, or the server closed the connection; `failure` is set as soon as the client reports one."""

    def __init__(self, server: ServerProcess, interval: float = 0.05) -> None:
        frame = request_frame(ApiVersionsRequest(client_software_name="watchdog", client_software_version="1"), 0)
        self.cmd = [sys.executable, str(WATCHDOG_CLIENT), server.host, str(server.port), str(interval),
                    str(RESPONSIVE_SECONDS * 4), frame.hex()]
        self.latencies: list[float] = []
        self.failure: BaseException | None = None
        self._reported = threading.Event()  # the first answer, or a failure, or the end
        self._proc: subprocess.Popen | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> Watchdog:
        """Returns once the client has had its first answer (it is asking while the test attacks)."""
        self._proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._reader.start()
        if not self._reported.wait(STARTUP_SECONDS):
            self._end()
            raise AssertionError(f"the well-behaved client had no answer within {STARTUP_SECONDS} s of starting")
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()

    def _end(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()  # the client's signal to stop
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self._reader.join(10)

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            kind, _, text = line.rstrip("\n").partition(" ")
            if kind == "answered":
                self.latencies.append(float(text))
            elif kind == "failed" and self.failure is None:
                self.failure = AssertionError(text)
            self._reported.set()
        self._reported.set()

    def check(self) -> None:
        assert self.failure is None, f"the well-behaved client failed: {self.failure!r}"
        assert self.latencies, "the well-behaved client got no answer at all"
        worst = max(self.latencies)
        assert worst <= RESPONSIVE_SECONDS, f"the well-behaved client waited {worst:.2f} s for an answer"


def commit_offsets(server: ServerProcess, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit `offsets` for a simple (memberless) group and assert that every partition was acknowledged
    (their topics are created first: a commit to a topic the server does not know is refused)."""
    counts: dict[str, int] = {}
    for topic, partition in offsets:
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    create_topics(server.host, server.port, counts)
    with WireClient(server.host, server.port) as client:
        response = client.call(commit_request(8, group, offsets))
    codes = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
    assert codes == {key: ErrorCode.none for key in offsets}, codes


def committed_offsets(server: ServerProcess, group: str, topics: dict[str, list[int]]) -> dict[tuple[str, int], int]:
    with WireClient(server.host, server.port) as client:
        response: Any = client.call(fetch_request(8, group, topics))
    (answer,) = response.groups
    assert answer.error_code == ErrorCode.none, answer.error_code
    return {(t.name, p.partition_index): p.committed_offset for t in answer.topics for p in t.partitions}


def assert_commits_survive(server: ServerProcess, group: str, offsets: dict[tuple[str, int], int]) -> None:
    topics: dict[str, list[int]] = {}
    for topic, partition in offsets:
        topics.setdefault(topic, []).append(partition)
    assert committed_offsets(server, group, topics) == offsets


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed `sock` (what Kafka does to a request it cannot parse) rather than
    answering; raises TimeoutError if it did neither within the socket's timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def open_fds(pid: int) -> int:
    """How many fds process `pid` holds."""
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextmanager
def fds_for_clients(count: int) -> Iterator[None]:
    """Raise this process's soft RLIMIT_NOFILE so that it can hold `count` client sockets (and restore it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 1024)), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
