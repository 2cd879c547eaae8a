"""Shared pieces of the hostile-client tests (docs/SECURITY.md): a server under a container-like
limit, a well-behaved client that keeps asking on its own connection and times every answer, and
offsets committed before an attack that must still be there after it."""

from __future__ import annotations

import resource
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from tests.support.offsets import commit_request, fetch_request
from tests.support.server_process import ServerProcess, create_topics, start_server
from tests.support.wire_client import WireClient

MEMORY_LIMIT = 3 << 30  # the address space of a container with a 3 GiB limit (RLIMIT_AS, like prlimit --as)
RESPONSIVE_SECONDS = 1.5  # the longest a well-behaved client may wait for an answer while another one attacks


def start_limited_server(log_dir: str | None = None, overrides: dict[str, str] | None = None, *,
                         memory: int = MEMORY_LIMIT, nofile: int | None = None,
                         topics: dict[str, int] | None = None) -> ServerProcess:
    """The real server process under RLIMIT_AS = `memory` (and RLIMIT_NOFILE = `nofile` if given),
    with `topics` (name -> partition count) created."""
    rlimits = {resource.RLIMIT_AS: memory}
    if nofile is not None:
        rlimits[resource.RLIMIT_NOFILE] = nofile
    return start_server(log_dir, overrides, rlimits=rlimits, topics=topics)


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
    """A well-behaved client on its own connection: ApiVersions every `interval` seconds from a
    thread, each answer timed. `check()` fails if any answer took longer than RESPONSIVE_SECONDS,
    never came, or the server closed the connection."""

    def __init__(self, server: ServerProcess, interval: float = 0.05) -> None:
        self.client = WireClient(server.host, server.port, timeout=RESPONSIVE_SECONDS * 4)
        self.interval = interval
        self.latencies: list[float] = []
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.client.close()

    def _run(self) -> None:
        request = ApiVersionsRequest(client_software_name="watchdog", client_software_version="1")
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                response = self.client.call(request)
            except BaseException as exc:  # noqa: BLE001 - reported by check()
                self.failure = exc
                return
            self.latencies.append(time.monotonic() - started)
            if response.error_code != ErrorCode.none:
                self.failure = AssertionError(f"ApiVersions answered {response.error_code}")
                return
            self._stop.wait(self.interval)

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
