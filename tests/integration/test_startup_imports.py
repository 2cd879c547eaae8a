"""What the server imports before it listens (issue 34's start-up time): not every kio schema, no record parser
for empty logs, no PostgreSQL driver in local mode.

Importing all kio request/response classes of every version in the API table took ~2 s of a ~4 s start; they
are imported per (api, version) on first use (protocol/apis.py's VersionMap). This runs the server's imports and
builds its dispatcher in a fresh interpreter (this test process has imported many schemas already) and lists
the APIs whose kio schema modules got loaded: only those whose answers a handler prebuilds at registration.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: ApiVersions encodes its constant answers and Heartbeat its usual ones when their handlers are made; the
#: headers are what every request and response needs.
PREBUILT = {"api_versions", "heartbeat", "request_header", "response_header"}

PROBE = """
import asyncio, json, sys
from coordinator.config import Config
from coordinator.app import App
from coordinator.log_setup import configure_logging
configure_logging("INFO", json=True)  # the server's lines to stderr: stdout is this probe's answer
config = Config.load(None, {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": sys.argv[1],
                            "offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"})
seen = {"after_import": sorted(m for m in sys.modules if m.startswith("kio.schema."))}


async def started():
    app = App(config)
    seen["after_app"] = sorted(m for m in sys.modules if m.startswith("kio.schema."))
    await app.start()
    await asyncio.shield(app.offsets.loading)
    seen["aiokafka"] = "aiokafka" in sys.modules
    seen["asyncpg"] = "asyncpg" in sys.modules
    await app.stop()

asyncio.run(started())
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    """The probe's findings (one fresh interpreter for the whole module)."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path_factory.mktemp("data"))], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def _apis(modules: list[str]) -> set[str]:
    """kio.schema.<api>.v<N>.<request|response> -> <api>."""
    return {name.split(".")[2] for name in modules if name.count(".") >= 3}


def test_the_server_imports_only_the_kio_schemas_it_prebuilds(seen):
    assert _apis(seen["after_import"]) <= {"request_header", "response_header"}, seen["after_import"]
    assert _apis(seen["after_app"]) <= PREBUILT, seen["after_app"]


def test_loading_empty_offsets_partitions_imports_no_record_parser(seen):
    """aiokafka's C batch parser (storage/record_readers.py) is imported by the first log that has batches to
    read (~0.1 s): a new data directory has none."""
    assert seen["aiokafka"] is False


def test_local_mode_imports_no_postgresql_driver(seen):
    """asyncpg (~30 ms) is cluster mode's: a local-mode server started and loaded has not imported it."""
    assert seen["asyncpg"] is False
