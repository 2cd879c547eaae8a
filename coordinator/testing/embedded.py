"""EmbeddedKafka: this server as a subprocess of a test, on ephemeral ports, with its data in a temp dir.

    with EmbeddedKafka() as kafka:
        kafka.create_topic("orders", partitions=3)
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
        ...
        kafka.kill()        # SIGKILL: what a crash or an OOM kill does
        kafka.restart()     # the same port and data: committed offsets and records are still there
        kafka.pause()       # SIGSTOP: the broker hangs (a GC pause, a frozen VM); clients time out
        kafka.resume()

Readiness is the server's own word: its JSON log on stderr says `listening` (once per listener) and, in local
mode, `offsets partitions loaded`; the log is kept in `<data dir>/server.log` and its tail goes into every error.
Clean-up does not depend on the test reaching its teardown: the server is started through
`coordinator.testing.child`, which dies with this process (PR_SET_PDEATHSIG on Linux when started from the main
thread, and a watchdog thread polling the parent everywhere), and an atexit hook kills what is still running. Data
directories left by a process that was killed outright are removed by the next EmbeddedKafka.
"""

from __future__ import annotations

import atexit
import collections
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

DIR_PREFIX = "embedded-kafka-"
OWNER_FILE = "owner.pid"
LOG_FILE = "server.log"
#: What a test suite wants of a broker that is not Kafka's production default: groups form at once (Kafka's own
#: test harnesses set the initial rebalance delay to 0 too) and fewer internal partitions to create at start.
TEST_DEFAULTS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
}
CLIENT_LISTENER = "CLIENT"
CONTROL_LISTENER = "CONTROL"  # plaintext, for create_topic when the client listener needs SASL or TLS

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory that holds this `coordinator` package
_live: weakref.WeakSet[EmbeddedKafka] = weakref.WeakSet()


class EmbeddedKafkaError(RuntimeError):
    """The server did not start, died, or refused an admin request; the message ends with its log's tail."""


class EmbeddedKafka:
    """A server for one test or one session. Arguments:

    overrides       server settings (Kafka's names, README "Settings"), over TEST_DEFAULTS
    sasl_users      {user: password}: the client listener speaks SASL (PLAIN with these users; SCRAM-SHA-256/512
                    users can be added with the admin API); bootstrap_servers then needs SASL, and
                    `security_protocol` says SASL_PLAINTEXT or SASL_SSL
    ssl_keystore    a PEM file with the server's key and certificate chain: the client listener speaks TLS
    ssl_truststore  a PEM CA file; with ssl_client_auth="required" clients must present a certificate it signed
    log_dir         where the data goes (default a fresh temp dir, removed by close())
    http            also start the HTTP listener (metrics, health, the console) on an ephemeral port: `http_url`
    """

    def __init__(self, overrides: Mapping[str, str] | None = None, *, sasl_users: Mapping[str, str] | None = None,
                 ssl_keystore: str | None = None, ssl_truststore: str | None = None, ssl_client_auth: str = "none",
                 log_dir: str | None = None, http: bool = False, start_timeout: float = 60.0,
                 env: Mapping[str, str] | None = None) -> None:
        self.sasl_users = dict(sasl_users or {})
        self.ssl = ssl_keystore is not None
        self.start_timeout = start_timeout
        self.env = dict(env or {})
        self._own_dir = log_dir is None
        self._root = Path(tempfile.mkdtemp(prefix=DIR_PREFIX)) if log_dir is None else Path(log_dir)
        self._root.mkdir(parents=True, exist_ok=True)
        if self._own_dir:
            (self._root / OWNER_FILE).write_text(str(os.getpid()))
            sweep_stale_dirs(self._root.parent)
        self.data_dir = str(self._root / "data")
        self.log_path = str(self._root / LOG_FILE)
        self.settings = {**TEST_DEFAULTS, **self._listener_settings(ssl_keystore, ssl_truststore, ssl_client_auth),
                         "log.dirs": self.data_dir, **({"http.listener": "http://127.0.0.1:0"} if http else {}),
                         **dict(overrides or {})}
        if self.settings.get("log.level", "INFO").upper() not in ("DEBUG", "INFO"):
            raise ValueError("EmbeddedKafka reads the server's INFO lines to know when it is ready: log.level must "
                             "stay INFO or DEBUG")
        self.ports: dict[str, int] = {}
        self.http_port: int | None = None
        self.process: subprocess.Popen[str] | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=40)
        self._log: TextIO | None = None
        self._events: dict[str, list[dict[str, Any]]] = {}
        self._changed = threading.Condition()
        self._paused = False

    # ------------------------------------------------------------------ the public surface
    @property
    def bootstrap_servers(self) -> str:
        """HOST:PORT of the client listener (what every client's bootstrap setting takes)."""
        return f"127.0.0.1:{self._port(CLIENT_LISTENER)}"

    @property
    def port(self) -> int:
        return self._port(CLIENT_LISTENER)

    @property
    def security_protocol(self) -> str:
        """What clients set as security.protocol / security_protocol for bootstrap_servers."""
        return ("SASL_" if self.sasl_users else "") + ("SSL" if self.ssl else "PLAINTEXT")

    @property
    def http_url(self) -> str:
        if self.http_port is None:
            raise EmbeddedKafkaError("no HTTP listener: EmbeddedKafka(http=True)")
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> EmbeddedKafka:
        """Start the server and wait until it is ready. A restart binds the ports of the first start, so clients
        keep their bootstrap address."""
        if self.running:
            raise EmbeddedKafkaError("already running")
        settings = dict(self.settings)
        if self.ports:
            settings["listeners"] = ",".join(f"{name}://127.0.0.1:{port}" for name, port in self.ports.items())
        if self.http_port is not None:
            settings["http.listener"] = f"http://127.0.0.1:{self.http_port}"
        args = [sys.executable, "-m", "coordinator.testing.child", "--parent", str(os.getpid())]
        with_pdeathsig = threading.current_thread() is threading.main_thread()  # it follows the spawning thread
        if with_pdeathsig:
            args.append("--pdeathsig")
        args += ["--", "serve"]
        for name, value in settings.items():
            args += ["--override", f"{name}={value}"]
        self._events = {}
        self._paused = False
        self._log = open(self.log_path, "a", encoding="utf-8", buffering=1)  # line by line; closed by the pump
        env = {**os.environ, **self.env}
        env.pop("COORDINATOR_LOG_LEVEL", None)  # readiness needs the INFO lines (log.level is in the overrides)
        # the server of the package that was imported here, whatever the child's path would find first
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_ROOT, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, env=env, cwd=self._root)
        _live.add(self)
        threading.Thread(target=self._pump, args=(self.process, self._log), daemon=True,
                         name=f"embedded-kafka-log-{self.process.pid}").start()
        try:
            self._wait_ready(settings)
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, as an orderly shutdown: the server finishes in-flight requests and exits (0)."""
        process = self.process
        if process is None or process.poll() is not None:
            return 0 if process is None else process.returncode
        if self._paused:
            self.resume()
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise EmbeddedKafkaError(f"the server did not stop within {timeout} s of SIGTERM"
                                     f"{self._tail_text()}") from None

    def kill(self) -> None:
        """SIGKILL: no flush, no goodbye to the clients, as a crash. Data made durable before stays."""
        process = self.process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        self._paused = False

    def restart(self) -> EmbeddedKafka:
        """Stop it (SIGTERM) if it runs, then start it again on the same ports and data."""
        self.stop()
        return self.start()

    def pause(self) -> None:
        """SIGSTOP: the process freezes; connections stay open and nothing is answered until resume()."""
        self._signal(signal.SIGSTOP)
        self._paused = True

    def resume(self) -> None:
        """SIGCONT after pause()."""
        self._signal(signal.SIGCONT)
        self._paused = False

    def close(self) -> None:
        """Stop the server (SIGKILL if it does not stop on SIGTERM) and remove its temp dir."""
        try:
            if self.running:
                try:
                    self.stop()
                except EmbeddedKafkaError:
                    pass  # killed by stop()
        finally:
            _live.discard(self)
            if self._own_dir:
                shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> EmbeddedKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None,
                     timeout: float = 30.0) -> None:
        """CreateTopics; a topic that exists already with this partition count is fine."""
        from coordinator.cli.client import CliError, Connection
        from protocol.apis import ApiKey
        from protocol.error_codes import error_name

        topic = {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                 "configs": [{"name": k, "value": v} for k, v in (config or {}).items()]}
        listener = CONTROL_LISTENER if CONTROL_LISTENER in self.ports else CLIENT_LISTENER
        try:
            connection = Connection("127.0.0.1", self._port(listener), timeout)
            try:
                answer = connection.call(ApiKey.CREATE_TOPICS, 2, 7, topics=[topic], validate_only=False,
                                         timeout=datetime.timedelta(seconds=timeout), timeout_ms=int(timeout * 1000))
            finally:
                connection.close()
        except CliError as exc:
            raise EmbeddedKafkaError(f"create_topic {name!r}: {exc}{self._tail_text()}") from None
        for result in answer.topics:
            code = int(result.error_code)
            if code == 36 and self._partitions_of(name) == partitions:  # TOPIC_ALREADY_EXISTS, as asked
                continue
            if code:
                raise EmbeddedKafkaError(f"create_topic {name!r}: {error_name(code)} "
                                         f"{getattr(result, 'error_message', '') or ''}".rstrip())

    def log_lines(self) -> list[str]:
        """The server's log, all starts of it (JSON lines)."""
        try:
            return Path(self.log_path).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []

    def __repr__(self) -> str:
        state = "paused" if self._paused else "running" if self.running else "stopped"
        where = self.bootstrap_servers if self.ports else "-"
        return f"<EmbeddedKafka {where} {state} {self._root}>"

    # ------------------------------------------------------------------ internals
    def _listener_settings(self, keystore: str | None, truststore: str | None, client_auth: str) -> dict[str, str]:
        if not self.sasl_users and keystore is None:
            return {"listeners": f"{CLIENT_LISTENER}://127.0.0.1:0",
                    "listener.security.protocol.map": f"{CLIENT_LISTENER}:PLAINTEXT"}
        out = {"listeners": f"{CLIENT_LISTENER}://127.0.0.1:0,{CONTROL_LISTENER}://127.0.0.1:0",
               "listener.security.protocol.map": f"{CLIENT_LISTENER}:{self.security_protocol},"
                                                 f"{CONTROL_LISTENER}:PLAINTEXT"}
        if self.sasl_users:
            users = " ".join(f'user_{user}="{_jaas_quote(password)}"' for user, password in self.sasl_users.items())
            out["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
            out[f"listener.name.{CLIENT_LISTENER.lower()}.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};")
        if keystore is not None:
            out["ssl.keystore.location"] = str(keystore)
            out["ssl.client.auth"] = client_auth
            if truststore is not None:
                out["ssl.truststore.location"] = str(truststore)
        return out

    def _port(self, listener: str) -> int:
        if listener not in self.ports:
            raise EmbeddedKafkaError("not started: use `with EmbeddedKafka() as kafka:` or call start()")
        return self.ports[listener]

    def _signal(self, sig: int) -> None:
        if not self.running:
            raise EmbeddedKafkaError("the server is not running")
        assert self.process is not None
        self.process.send_signal(sig)

    def _pump(self, process: subprocess.Popen[str], log: TextIO) -> None:
        """Every stderr line into server.log and the tail; the events readiness needs, parsed."""
        assert process.stderr is not None
        try:
            for line in process.stderr:
                log.write(line)
                self._tail.append(line.rstrip("\n"))
                if '"listening"' in line or '"http listening"' in line or "partitions loaded" in line:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    with self._changed:
                        self._events.setdefault(str(event.get("event")), []).append(event)
                        self._changed.notify_all()
        finally:
            log.close()
            with self._changed:
                self._changed.notify_all()

    def _wait_ready(self, settings: Mapping[str, str]) -> None:
        listeners = len(settings["listeners"].split(","))
        local = not settings.get("storage.url")
        deadline = time.monotonic() + self.start_timeout
        assert self.process is not None
        with self._changed:
            while True:
                listening = self._events.get("listening", [])
                ready = (len(listening) >= listeners and (not local or "offsets partitions loaded" in self._events)
                         and ("http.listener" not in settings or "http listening" in self._events))
                if ready:
                    break
                if self.process.poll() is not None:
                    raise EmbeddedKafkaError(f"the server exited with {self.process.returncode} before it was "
                                             f"ready{self._tail_text()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise EmbeddedKafkaError(f"the server was not ready in {self.start_timeout} s{self._tail_text()}")
                self._changed.wait(min(left, 0.2))
        self.ports = {str(event["listener"]).partition("://")[0]: int(event["port"]) for event in listening}
        http = self._events.get("http listening")
        if http:
            self.http_port = int(http[0]["port"])

    def _partitions_of(self, topic: str) -> int | None:
        from coordinator.cli.admin_client import Admin

        with Admin(f"127.0.0.1:{self._port(CONTROL_LISTENER if CONTROL_LISTENER in self.ports else CLIENT_LISTENER)}",
                   10.0) as admin:
            found = admin.metadata([topic]).get(topic)
        return None if found is None else len(found)

    def _tail_text(self) -> str:
        return "\nserver log (last lines):\n  " + "\n  ".join(list(self._tail)[-15:]) if self._tail else ""


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def sweep_stale_dirs(parent: Path) -> None:
    """Remove EmbeddedKafka temp dirs whose owner process is gone (it was killed before it could clean up)."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(DIR_PREFIX):
            continue
        try:
            owner = int((entry / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if owner != os.getpid() and not _alive(owner):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@atexit.register
def _kill_all() -> None:
    """The interpreter is exiting with servers still running (a test that never reached its teardown)."""
    for kafka in list(_live):
        try:
            kafka.kill()
        finally:
            kafka.close()
