"""The package as a user installs it: `python -m build` makes the sdist and, from it, the wheel; the wheel goes into
a fresh venv; its `kafka-coordinator` console script serves (without pyarrow, loading a bulk-load snapshot), a real
client round trip and `kafka-coordinator groups describe` run against it, and EmbeddedKafka works from the
installed package outside this checkout.

Cost (docs/BENCHMARKS.md, "The wheel test"): building without build isolation (the test extra installs
setuptools and build into .venv) and giving the fresh venv its dependencies from .venv through a .pth file (`pip
install --no-deps --no-index` of the wheel: no download) keeps it to seconds; a full `pip install` of the wheel
from the index took 2.5-3.5 minutes here with or without pip's cache, too much for every run. `pip check` in the
fresh venv proves the wheel's requirements are met by what it sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
GROUP = "wheel-group"


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """(the fresh venv, an environment for its commands: no PYTHONPATH, pyarrow blocked)."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, ROOT, cwd=tmp)
    [wheel] = dist.glob("kafka_group_coordinator-*.whl")
    [sdist] = dist.glob("kafka_group_coordinator-*.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    for wanted in ("coordinator/testing/pytest_plugin.py", "coordinator/testing/child.py",
                   "coordinator/ops/console/console.js", "coordinator/ops/console/index.html",
                   "storage/snapshot.py", "protocol/apis.py", "spark_jobs/bulk_load.py"):
        assert wanted in names, f"{wanted} is not in {wheel.name}"
    assert not any(name.startswith(("tests/", "bench/")) for name in names), "tests or bench in the wheel"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "kafka-coordinator = coordinator.__main__:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    assert sdist.stat().st_size > 100_000

    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp).strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "zz-dependencies-from-dev-venv.pth").write_text("\n".join(sorted(ours)) + "\n")
    _run(python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", wheel, cwd=tmp)
    _run(python, "-m", "pip", "check", cwd=tmp)
    blocker = tmp / "blocker" / "pyarrow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('pyarrow is blocked: the server must run without it')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COORDINATOR_", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = str(tmp / "blocker")
    where = _run(python, "-c", "import coordinator, storage; print(coordinator.__file__)", cwd=tmp, env=env)
    assert where.startswith(str(env_dir)), f"coordinator imported from {where}, not the installed wheel"
    return env_dir, env


def test_the_wheels_console_script_serves_a_snapshot_and_a_client_round_trip_without_pyarrow(installed, tmp_path):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    from storage.records import OffsetCommitKey, OffsetCommitValue
    from storage.snapshot import write_snapshot

    env_dir, env = installed
    data = tmp_path / "data"
    # a bulk-load snapshot (format 2) of one partition of a 1-partition __consumer_offsets
    write_snapshot(str(data), 0, [], [(OffsetCommitKey("migrated", "t", 0), OffsetCommitValue(42, "m", 1))], None)
    server = subprocess.Popen([env_dir / "bin" / "kafka-coordinator", "serve", "--override",
                               "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={data}",
                               "--override", "offsets.topic.num.partitions=1", "--override",
                               "group.initial.rebalance.delay.ms=0"],
                              cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        bootstrap, lines = _wait_listening(server)
        assert any('"offsets snapshot chosen"' in line for line in lines), lines[-5:]
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for i in range(5):
            producer.send("t", f"r{i}".encode(), partition=0)
        producer.flush()
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, auto_offset_reset="earliest",
                                 enable_auto_commit=False, consumer_timeout_ms=10000)
        consumer.assign([TopicPartition("t", 0)])
        values = [m.value for _, m in zip(range(5), consumer)]
        consumer.commit()
        assert consumer.committed(TopicPartition("t", 0)) == 5
        consumer.close()
        assert values == [f"r{i}".encode() for i in range(5)]
        migrated = KafkaConsumer(bootstrap_servers=bootstrap, group_id="migrated", enable_auto_commit=False)
        assert migrated.committed(TopicPartition("t", 0)) == 42  # from the snapshot, read without pyarrow
        migrated.close()
        described = _run(env_dir / "bin" / "kafka-coordinator", "groups", "--bootstrap-server", bootstrap, "--json",
                         "describe", GROUP, cwd=tmp_path, env=env)
        [group] = json.loads(described)
        assert group["group_id"] == GROUP, group
        assert [(o["topic"], o["partition"], o["committed_offset"]) for o in group["offsets"]] == [("t", 0, 5)], group
    finally:
        server.terminate()
        code = server.wait(30)
    assert code == 0
    # the third command: the offsets log the server wrote, decoded (one partition: every group's commits are there)
    dumped = _run(env_dir / "bin" / "kafka-coordinator", "dump-log", "--json", data / "__consumer_offsets-0",
                  cwd=tmp_path, env=env)
    records = [json.loads(line) for line in dumped.splitlines()]
    commits = [r for r in records if r.get("group") == GROUP and r.get("topic") == "t"]
    assert commits and commits[-1]["value"]["offset"] == 5, dumped[-2000:]


def _wait_listening(server: subprocess.Popen) -> tuple[str, list[str]]:
    lines: list[str] = []
    assert server.stderr is not None
    for line in server.stderr:
        lines.append(line)
        if '"listening"' in line:
            event = json.loads(line)
            return f"127.0.0.1:{event['port']}", lines
    raise AssertionError(f"the wheel's server exited before listening: {lines[-10:]}")


def test_embedded_kafka_works_from_the_installed_wheel_outside_the_checkout(installed, tmp_path):
    env_dir, env = installed
    script = textwrap.dedent("""
        import coordinator.testing, sys
        from coordinator.testing import EmbeddedKafka
        assert coordinator.testing.__file__.startswith(sys.prefix), coordinator.testing.__file__
        with EmbeddedKafka() as kafka:
            kafka.create_topic("from-the-wheel", 2)
            from confluent_kafka.admin import AdminClient
            topics = AdminClient({"bootstrap.servers": kafka.bootstrap_servers}).list_topics(timeout=10).topics
            print(len(topics["from-the-wheel"].partitions))
    """)
    assert _run(env_dir / "bin" / "python", "-c", script, cwd=tmp_path, env=env).strip() == "2"
