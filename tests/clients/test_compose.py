"""The focused real-client suite the compose test runner runs INSIDE a container against the coordinator
container (docker-compose.yml, `./dev compose-test`, docs/CONTAINERS.md).

Skipped unless COORDINATOR_BOOTSTRAP names a running server (compose sets coordinator:9092). Each test uses its
own topic and group, so a rerun against the same data volume is fine:

- the ApiVersions health probe shipped in the image (docker/healthcheck.py) answers healthy;
- a group of 3 of each Python client and kcat consumes a 6-partition topic exactly once, commits, stops, and a
  second group of 3 resumes from the commits (scenarios.group_of_three_commits_survive_restart);
- the admin views through confluent-kafka's AdminClient and kafka-python's KafkaAdminClient
  (admin_scenario.admin_scenario: list, describe, offsets, delete offsets, delete group).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.clients.admin_scenario import admin_scenario
from tests.clients.produce import create_topic
from tests.clients.scenarios import group_of_three_commits_survive_restart

BOOTSTRAP = os.environ.get("COORDINATOR_BOOTSTRAP", "")
pytestmark = pytest.mark.skipif(not BOOTSTRAP, reason="COORDINATOR_BOOTSTRAP not set (run by ./dev compose-test)")
RUN = os.environ.get("COMPOSE_RUN_ID") or uuid.uuid4().hex[:8]
HEALTHCHECK = next((p for p in (Path("/usr/local/bin/coordinator-healthcheck"),
                                Path(__file__).resolve().parents[2] / "docker" / "healthcheck.py") if p.exists()), None)


def _probe() -> subprocess.CompletedProcess:
    # the wire probe against the coordinator (this runner's image would probe its own HTTP port otherwise)
    env = {**os.environ, "COORDINATOR_HEALTHCHECK_ADDRESS": BOOTSTRAP.split(",")[0], "COORDINATOR_HTTP_LISTENER": ""}
    return subprocess.run([sys.executable, str(HEALTHCHECK)], env=env, capture_output=True, text=True, timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _server_up():
    """The coordinator may still be starting when the runner starts: wait (60 s) for a healthy probe."""
    deadline = time.monotonic() + 60
    while True:
        done = _probe()
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{BOOTSTRAP} not healthy within 60 s: {done.stderr.strip()}")
        time.sleep(1)


def test_healthcheck_probe():
    done = _probe()
    assert done.returncode == 0, done.stderr


def test_operations_endpoint_is_on_in_the_image():
    """The image turns http.listener on (port 9644): ready, and /metrics in Prometheus' format."""
    from prometheus_client.parser import text_string_to_metric_families

    base = f"http://{BOOTSTRAP.split(',')[0].rsplit(':', 1)[0]}:9644"
    with urllib.request.urlopen(base + "/health/ready", timeout=10) as response:
        ready = json.load(response)
        assert response.status == 200 and ready["status"] == "ready"
    owned = ready["partitions_owned"]  # all 50 alone; a share of them as a node of the cluster profile
    assert owned > 0 and ready["partitions_loading"] == []
    with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
        samples = {(s.name, tuple(s.labels.items())): s.value
                   for f in text_string_to_metric_families(response.read().decode()) for s in f.samples}
    assert samples[("kcoord_partitions", (("state", "loaded"),))] == owned
    assert samples[("process_resident_memory_bytes", ())] > 0
    # the console's files are in the installed package (package data), not only in a checkout
    with urllib.request.urlopen(base + "/", timeout=10) as response:
        assert b"<title>Group coordinator console</title>" in response.read()
    with urllib.request.urlopen(base + "/console/console.js", timeout=10) as response:
        assert response.status == 200 and b"textContent" in response.read()


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka", "kcat"])
def test_group_of_three_commits_resume(client):
    topic, group = f"compose-{RUN}-{client}", f"compose-group-{RUN}-{client}"
    create_topic(BOOTSTRAP, topic, 6)
    group_of_three_commits_survive_restart(client, BOOTSTRAP, topic, group, per_round=300)


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_admin_views(client):
    admin_scenario(client, BOOTSTRAP, prefix=f"compose-admin-{RUN}")
