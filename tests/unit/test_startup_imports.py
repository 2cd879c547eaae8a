"""What the server imports before it listens (issue 34's start-up time): not every kio schema.

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

ROOT = Path(__file__).resolve().parents[2]

#: ApiVersions encodes its constant answers and Heartbeat its usual ones when their handlers are made; the
#: headers are what every request and response needs.
PREBUILT = {"api_versions", "heartbeat", "request_header", "response_header"}

PROBE = """
import json, sys
from coordinator.config import Config
from coordinator.app import App
config = Config.load(None, {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": sys.argv[1]})
after_import = sorted(m for m in sys.modules if m.startswith("kio.schema."))
App(config)
after_app = sorted(m for m in sys.modules if m.startswith("kio.schema."))
print(json.dumps({"after_import": after_import, "after_app": after_app}))
"""


def _apis(modules: list[str]) -> set[str]:
    """kio.schema.<api>.v<N>.<request|response> -> <api>."""
    return {name.split(".")[2] for name in modules if name.count(".") >= 3}


def test_the_server_imports_only_the_kio_schemas_it_prebuilds(tmp_path):
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    loaded = json.loads(out.stdout)
    assert _apis(loaded["after_import"]) <= {"request_header", "response_header"}, loaded["after_import"]
    assert _apis(loaded["after_app"]) <= PREBUILT, loaded["after_app"]
