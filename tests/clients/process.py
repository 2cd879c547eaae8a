"""One client subprocess speaking the harness line protocol, with bounded waits and sure cleanup.

Each client runs in its own session (process group), so `kill()` takes down everything it
started (the kcat wrapper and kcat, a JVM's children). stdout is parsed as JSON lines into
`events`; stderr is kept as a bounded tail for failure messages. Every wait has a timeout and
fails with the client's recent events and stderr tail. Processes that a test forgets are
killed by `kill_all()` (the harness's pytest fixture and an atexit hook call it).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable

_LIVE: set[ClientProcess] = set()
_LIVE_LOCK = threading.Lock()


def _clock(at: float) -> str:
    """HH:MM:SS.mmm in UTC, the clock of the server's structlog timestamps."""
    return time.strftime("%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}"


class ClientProcess:
    """A running client driver; `name` labels it in failure messages (e.g. "java#2")."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None):
        self.name = name
        self.cmd = cmd
        self.events: list[dict] = []
        self.received: list[float] = []  # wall-clock time each event arrived (matches the server's log times)
        self.stderr: collections.deque[str] = collections.deque(maxlen=400)
        self._changed = threading.Condition()
        self._terminated = False
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, errors="replace", start_new_session=True,
                                     env={**os.environ, **(env or {})}, cwd=cwd)
        with _LIVE_LOCK:
            _LIVE.add(self)
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()

    # ------------------------------------------------------------- reading
    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            with self._changed:
                if isinstance(event, dict) and "event" in event:
                    self.events.append(event)
                    self.received.append(time.time())
                else:
                    self.stderr.append(f"(stdout) {line.rstrip()}")
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    # ------------------------------------------------------------- views
    def of(self, name: str) -> list[dict]:
        with self._changed:
            return [e for e in self.events if e["event"] == name]

    def failures(self, restarts_expected: bool = False) -> list[dict]:
        """Its `error` events, and its `restarting` ones (a crash the client recovers from by itself: kafkajs)
        unless the test took the broker away on purpose."""
        return self.of("error") + ([] if restarts_expected else self.of("restarting"))

    @property
    def assignment(self) -> set[tuple[str, int]]:
        """The member's current assignment, from its latest assigned/revoked event."""
        with self._changed:
            changes = [e for e in self.events if e["event"] in ("assigned", "revoked")]
        return {(t, p) for t, p in changes[-1]["assignment"]} if changes else set()

    @property
    def records(self) -> list[dict]:
        return self.of("record")

    @property
    def committed(self) -> dict[tuple[str, int], int]:
        """Latest committed next-offset per partition, as this client reported it."""
        out: dict[tuple[str, int], int] = {}
        for event in self.of("committed"):
            for topic, partition, offset in event["offsets"]:
                out[(topic, partition)] = offset
        return out

    def describe(self, events: int = 8, lines: int = 25) -> str:
        """Recent events and stderr tail, for failure messages."""
        with self._changed:
            recent = [f"{_clock(at)} {json.dumps(e)}" for e, at in zip(self.events, self.received, strict=True)
                      if e["event"] != "record"][-events:]
            records = sum(1 for e in self.events if e["event"] == "record")
        tail = list(self.stderr)[-lines:]
        state = "running" if self.proc.poll() is None else f"exited {self.proc.returncode}"
        return (f"--- {self.name} ({state}, {records} records) cmd: {' '.join(self.cmd)}\n"
                f"events: {recent}\nstderr tail:\n  " + "\n  ".join(tail))

    # ------------------------------------------------------------- waiting
    def wait_until(self, check: Callable[[ClientProcess], bool], timeout: float, what: str) -> None:
        """Block until check(self) holds; fail after `timeout` s (or if the client exits first)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if check(self):
                    return
                if self.proc.poll() is not None and not self._readers[0].is_alive():
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, 0.2))
        if check(self):
            return
        raise AssertionError(f"{self.name}: {what} not seen within {timeout:.0f}s\n{self.describe()}")

    def wait_for(self, name: str, timeout: float = 30.0, **fields) -> dict:
        """The first event `name` whose fields match; fails with the client's output after `timeout`."""
        def match(_self) -> bool:
            return any(all(e.get(k) == v for k, v in fields.items()) for e in self.of(name))

        self.wait_until(match, timeout, f"event {name!r} {fields or ''}")
        return next(e for e in self.of(name) if all(e.get(k) == v for k, v in fields.items()))

    # ------------------------------------------------------------- ending
    def terminate(self) -> None:
        """Send SIGTERM and return at once (stop several members in parallel, then `stop()` each)."""
        # Only once: a second SIGTERM can hit a Python client during interpreter shutdown, when the
        # default action (die with -15) is back.
        if self.proc.poll() is None and not self._terminated:
            self._terminated = True
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM: the client commits (explicit mode), closes (LeaveGroup) and exits. Returns its exit code;
        fails (after SIGKILL) if it does not exit within `timeout`."""
        self.terminate()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.name}: did not exit within {timeout:.0f}s of SIGTERM\n{self.describe()}") from None
        self._finish()
        return code

    def kill(self) -> None:
        """SIGKILL the whole process group: no commit, no LeaveGroup (a crashed application)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self._finish()

    def wait_exit(self, timeout: float = 30.0) -> int:
        """Wait for a client that ends by itself (e.g. after --count records)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.name}: did not exit by itself within {timeout:.0f}s\n{self.describe()}") from None
        self._finish()
        return code

    def _finish(self) -> None:
        # The process is gone; make sure no grandchild survives in its group, then drain the readers.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for reader in self._readers:
            reader.join(5)
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def __enter__(self) -> ClientProcess:
        return self

    def __exit__(self, *_exc) -> None:
        self.kill()


def wait_all(clients: list[ClientProcess], check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll until check() holds across several clients; fail with every client's output after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        dead = [c for c in clients if c.proc.poll() is not None]
        if dead:
            raise AssertionError(f"{what}: {', '.join(c.name for c in dead)} exited early\n"
                                 + "\n".join(c.describe() for c in clients))
        time.sleep(0.1)
    if not check():
        raise AssertionError(f"{what}: not reached within {timeout:.0f}s\n" + "\n".join(c.describe() for c in clients))


def kill_all() -> None:
    """SIGKILL every client still running (test teardown, interpreter exit)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for client in live:
        client.kill()


atexit.register(kill_all)
