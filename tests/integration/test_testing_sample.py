"""coordinator.testing as a user's project meets it: tests/testing_sample/ (a project of its own that knows only the
public plugin) run by pytest in a subprocess, and EmbeddedKafka's clean-up when the test process dies."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from coordinator.testing.embedded import DIR_PREFIX, OWNER_FILE, EmbeddedKafka

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "testing_sample"


def _env() -> dict[str, str]:
    """This tree's packages first (the shared .venv's editable install may point at another checkout)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def test_the_sample_project_passes_with_the_public_plugin():
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "--kafka-log-on-failure"], cwd=SAMPLE, env=_env(), capture_output=True, text=True,
                         timeout=600)
    tail = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, tail
    summary = re.search(r"(\d+) passed", run.stdout)
    assert summary and int(summary.group(1)) == 6 and " failed" not in run.stdout, tail


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie (not reaped yet: its parent died and init reaps it) counts as gone
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z"):
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("where", ["main thread, paused", "worker thread"])
def test_the_server_dies_with_a_test_process_killed_outright(tmp_path, where):
    """SIGKILL of the process that started EmbeddedKafka (no teardown, no atexit): the server goes too. From the
    main thread the kernel kills it (PR_SET_PDEATHSIG), even frozen by pause(); from a worker thread the child's
    watchdog sees its parent gone."""
    script = textwrap.dedent(f"""
        import sys, threading, time
        from coordinator.testing import EmbeddedKafka
        kafka = EmbeddedKafka()
        def start():
            kafka.start()
            {"kafka.pause()" if "paused" in where else ""}
            print(kafka.process.pid, kafka._root, flush=True)
        if {"worker" in where}:
            t = threading.Thread(target=start); t.start(); t.join()
        else:
            start()
        time.sleep(600)
    """)
    owner = subprocess.Popen([sys.executable, "-c", script], env=_env(), stdout=subprocess.PIPE, text=True,
                             cwd=tmp_path)
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline().split()
        assert line, "the owner process did not start a server"
        server_pid, root = int(line[0]), Path(line[1])
        os.kill(server_pid, 0)  # running
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        assert _wait_gone(server_pid, 10), f"the server {server_pid} outlived its test process ({where})"
        assert root.is_dir()  # left behind by the killed owner: the next EmbeddedKafka sweeps it
        EmbeddedKafka(log_dir=None).close()
        assert not root.exists(), "a dead owner's data dir was not swept"
    finally:
        owner.kill()
        owner.wait()


def test_only_dead_owners_dirs_are_swept(tmp_path):
    live = Path(tmp_path / f"{DIR_PREFIX}live")
    live.mkdir()
    (live / OWNER_FILE).write_text(str(os.getpid()))
    unrelated = Path(tmp_path / "embedded-something")
    unrelated.mkdir()
    dead_pid = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout.strip()
    dead = Path(tmp_path / f"{DIR_PREFIX}dead")
    dead.mkdir()
    (dead / OWNER_FILE).write_text(dead_pid)
    from coordinator.testing.embedded import sweep_stale_dirs

    sweep_stale_dirs(tmp_path)
    assert live.is_dir() and unrelated.is_dir() and not dead.exists()


def test_restart_keeps_the_port_and_the_data_and_stop_exits_0(tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition

    with EmbeddedKafka(log_dir=str(tmp_path / "kafka")) as kafka:
        kafka.create_topic("kept", 1)
        kafka.create_topic("kept", 1)  # exists with that count: fine
        bootstrap = kafka.bootstrap_servers
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce("kept", b"one")
        assert producer.flush(15) == 0
        kafka.kill()
        assert not kafka.running
        kafka.restart()
        assert kafka.bootstrap_servers == bootstrap
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition("kept", 0), timeout=15)
        finally:
            consumer.close()
        assert (low, high) == (0, 1)
        assert kafka.stop() == 0
    assert (tmp_path / "kafka" / "server.log").is_file()  # a caller's log_dir is kept


def test_sasl_over_tls_admits_its_users_only(certs):
    """sasl_users + ssl_keystore: the client listener is SASL_SSL (PLAIN with those users); create_topic goes
    through the plaintext control listener."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    with EmbeddedKafka(sasl_users={"alice": 'pa"ss'}, ssl_keystore=str(certs.server),
                       ssl_truststore=str(certs.ca)) as kafka:
        assert kafka.security_protocol == "SASL_SSL"
        kafka.create_topic("secured", 2)

        def admin(password: str) -> AdminClient:
            return AdminClient({"bootstrap.servers": kafka.bootstrap_servers, "security.protocol": "SASL_SSL",
                                "ssl.ca.location": str(certs.ca), "sasl.mechanism": "PLAIN",
                                "sasl.username": "alice", "sasl.password": password})

        topics = admin('pa"ss').list_topics(timeout=15).topics
        assert len(topics["secured"].partitions) == 2
        with pytest.raises(KafkaException):
            admin("wrong").list_topics(timeout=5)
