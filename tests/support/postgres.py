"""A throwaway PostgreSQL for tests and benches: initdb + pg_ctl of the machine's PostgreSQL.

`PostgresServer` is a plain context manager (scripts, benches); the `postgres_server` fixture
(session-scoped, so each xdist worker gets its own cluster) and `pg_url` (a fresh database per
test) are registered for every test by tests/conftest.py. `standby()` adds a synchronous streaming-replication
standby (pg_basebackup); `kill()` (kill -9 of the postmaster) and `promote()` make a PostgreSQL failover;
`freeze()` (SIGSTOP of the postmaster and every process it started) is a primary that vanishes without closing its
connections (its host lost, the network cut), until `thaw()`.

initdb refuses to run as root; as root the server runs as the unprivileged `postgres` user
(created by Debian's postgresql package) through `runuser`, in a temp dir that user owns.
Missing binaries skip the tests that need them, except under CI=true, where they fail loudly.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

DEBIAN_BIN_GLOB = "/usr/lib/postgresql/*/bin"
RUN_AS_WHEN_ROOT = "postgres"
# Small and quick, but enough connections for 3 nodes x a pool of 8 + tests + tools.
SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "200",
    "shared_buffers": "32MB",
    "dynamic_shared_memory_type": "posix",
    "max_wal_size": "256MB",
    "log_min_messages": "warning",
    "logging_collector": "off",
}


# $1: the pid to outlive, $2: the data dir, $3: the temp dir, then the pg_ctl command. A frozen server is thawed
# first (a stopped postmaster would never act on pg_ctl's signal).
_WATCHDOG = """
pid=$1 data=$2 dir=$3; shift 3
while kill -0 "$pid" 2>/dev/null; do sleep 1; done
postmaster=$(head -n 1 "$data/postmaster.pid" 2>/dev/null)
[ -n "$postmaster" ] && kill -CONT $postmaster $(ps -o pid= --ppid "$postmaster") 2>/dev/null
"$@" stop -m immediate -w -D "$data"
rm -rf "$dir"
"""


class PostgresUnavailableError(RuntimeError):
    """No PostgreSQL binaries (or no unprivileged user to run them as root) on this machine."""


def find_bin_dir() -> Path:
    """The directory holding initdb/pg_ctl/psql: on PATH, else Debian's /usr/lib/postgresql/<v>/bin."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    candidates = sorted(glob.glob(DEBIAN_BIN_GLOB), key=_version_key, reverse=True)
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise PostgresUnavailableError(f"no initdb/pg_ctl on PATH nor in {DEBIAN_BIN_GLOB} (./dev setup installs them)")


def _version_key(path: str) -> float:
    try:
        return float(Path(path).parent.name)
    except ValueError:
        return 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """One PostgreSQL cluster in a temp dir on a free port; `with PostgresServer() as pg: pg.url`."""

    def __init__(self) -> None:
        self.bin_dir = find_bin_dir()
        self._user = self._unprivileged_user()
        self.port = 0
        self.dir = Path()
        self._database_numbers = itertools.count(1)
        self._running = False
        self._frozen: list[int] = []
        self._watchdog: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    @staticmethod
    def _unprivileged_user() -> str | None:
        if os.geteuid() != 0:
            return None
        try:
            pwd.getpwnam(RUN_AS_WHEN_ROOT)
        except KeyError as exc:
            raise PostgresUnavailableError(
                f"running as root and no '{RUN_AS_WHEN_ROOT}' user to run PostgreSQL as (initdb refuses root)"
            ) from exc
        return RUN_AS_WHEN_ROOT

    def _command(self, program: str, *args: str) -> list[str]:
        command = [str(self.bin_dir / program), *args]
        return command if self._user is None else ["runuser", "-u", self._user, "--", *command]

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(self._command(*args), capture_output=True, text=True, timeout=120, cwd=self.dir)

    def _watch(self) -> None:
        """If this process dies without stop() (kill -9, os._exit), a watchdog stops the server and removes
        its directory, so no PostgreSQL outlives its test run."""
        self._watchdog = subprocess.Popen(
            ["sh", "-c", _WATCHDOG, "watchdog", str(os.getpid()), str(self._data), str(self.dir),
             *self._command("pg_ctl")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def start(self, primary: PostgresServer | None = None) -> PostgresServer:
        """initdb and start; with `primary`: a streaming-replication standby of it instead (pg_basebackup -R:
        a copy of its data that follows its WAL, read-only until promoted)."""
        self.dir = Path(tempfile.mkdtemp(prefix="kc-pg-"))
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        try:
            if primary is None:
                initdb = ("initdb", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale", "--no-sync")
                _check(self._run(*initdb, "-D", str(self._data)), "initdb")
            else:
                _check(self._run("pg_basebackup", "-D", str(self._data), "-h", "127.0.0.1", "-p", str(primary.port),
                                 "-U", "postgres", "-X", "stream", "-R", "-c", "fast", "--no-sync"), "pg_basebackup")
            self.port = free_port()
            settings = {**SETTINGS, "port": str(self.port), "unix_socket_directories": f"'{self.dir}'"}
            with open(self._data / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.writelines(f"{name} = {value}\n" for name, value in settings.items())
            self._start_server()
            self._watch()
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        return self

    @property
    def _data(self) -> Path:
        return self.dir / "data"

    def _start_server(self) -> None:
        done = self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self._data), "-l", str(self.dir / "server.log"))
        if done.returncode != 0:
            log = (self.dir / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"pg_ctl start failed ({done.returncode}): {done.stderr}\n{log}")
        self._running = True

    def _stop_server(self) -> None:
        """pg_ctl stop -m immediate: a crash, as far as the data is concerned (committed rows survive it)."""
        if self._running:
            self._running = False
            _check(self._run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", str(self._data)), "pg_ctl stop")

    def standby(self) -> PostgresServer:
        """A synchronous standby of this server, started and streaming: from now on a COMMIT here is answered
        only once the standby has flushed it, so promoting the standby loses nothing acknowledged."""
        standby = PostgresServer().start(primary=self)
        try:
            self.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")
            self.sql("SELECT pg_reload_conf()")
            deadline = time.monotonic() + 60
            while self.sql("SELECT string_agg(sync_state, ',') FROM pg_stat_replication").strip() != "sync":
                if time.monotonic() > deadline:
                    raise RuntimeError("the standby did not become synchronous within 60 s")
                time.sleep(0.05)
        except BaseException:
            standby.stop()
            raise
        return standby

    @property
    def postmaster_pid(self) -> int:
        return int((self._data / "postmaster.pid").read_text().split()[0])

    def kill(self) -> None:
        """kill -9 of the postmaster: its listening socket closes at once; its backends notice and end
        themselves (a commit waiting for the synchronous standby is never answered)."""
        pid = self.postmaster_pid
        self._running = False
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _alive(pid):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the postmaster {pid} outlived SIGKILL for 30 s")
            time.sleep(0.01)

    def freeze(self) -> None:
        """SIGSTOP of the postmaster, then of every process it started (backends, walsenders, writers): nothing
        answers any more, yet every connection stays open and this host's kernel still accepts new ones into the
        listen backlog and acknowledges what clients send -- as a host lost without a reset looks to a client,
        apart from those acknowledgements (only a timeout of the client's own can tell)."""
        postmaster = self.postmaster_pid
        os.kill(postmaster, signal.SIGSTOP)  # first: it starts no process after this
        _wait_state(postmaster, "T")
        self._frozen = [postmaster]
        for pid in _children(postmaster):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                self._frozen.append(pid)
        for pid in self._frozen:
            _wait_state(pid, "T")

    def thaw(self) -> None:
        """SIGCONT of every process `freeze` stopped: the server goes on from where it stood, reading what its
        clients sent meanwhile."""
        frozen, self._frozen = self._frozen, []
        for pid in reversed(frozen):  # the postmaster last
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def promote(self) -> None:
        """pg_ctl promote (a standby): it ends recovery and accepts writes."""
        _check(self._run("pg_ctl", "promote", "-w", "-t", "60", "-D", str(self._data)), "pg_ctl promote")

    @contextmanager
    def down(self) -> Iterator[None]:
        """PostgreSQL crashed for the duration of the block, back on the same port after it (crash recovery)."""
        self._stop_server()
        try:
            yield
        finally:
            self._start_server()

    def new_database(self) -> str:
        """CREATE DATABASE kc_<n>: a fresh, empty database; returns its URL."""
        name = f"kc_{next(self._database_numbers)}"
        self.sql(f"CREATE DATABASE {name}")
        return self.database_url(name)

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement with psql (no event loop needed); returns its unaligned output."""
        done = subprocess.run(
            [str(self.bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-c", statement],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        _check(done, "psql")
        return done.stdout

    def stop(self) -> None:
        """Stop at once (a throwaway cluster needs no clean shutdown) and remove the temp dir."""
        self.thaw()
        self._stop_server()
        if self._watchdog is not None:
            self._watchdog.kill()
            self._watchdog.wait()
            self._watchdog = None
        if self.dir != Path():
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    state = _state(pid)  # a zombie is dead: reaped by nobody here (the postmaster is not our child)
    return state is not None and state != "Z"


def _state(pid: int) -> str | None:
    """The state letter /proc gives `pid` (R, S, T: stopped, Z: zombie...); None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _children(parent: int) -> list[int]:
    """The processes whose parent is `parent` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def _wait_state(pid: int, state: str, timeout: float = 10) -> None:
    """Until `pid` is in `state` (T: stopped), or has ended (gone, or a zombie)."""
    deadline = time.monotonic() + timeout
    while (current := _state(pid)) not in (state, "Z", None):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {pid} not in state {state} within {timeout} s (it is {current})")
        time.sleep(0.005)


def _check(done: subprocess.CompletedProcess, what: str) -> None:
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")


def server_or_skip() -> PostgresServer:
    """A PostgresServer (not started); skips the test without binaries, or fails it under CI=true."""
    try:
        return PostgresServer()
    except PostgresUnavailableError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL is required under CI: {exc}", pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL per test session (per xdist worker); skipped without binaries unless CI=true."""
    with server_or_skip() as server:
        yield server


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty database on the session's PostgreSQL."""
    return postgres_server.new_database()
