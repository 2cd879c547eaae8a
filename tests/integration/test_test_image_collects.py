"""The compose test's container (the Dockerfile's `test` stage) holds the directories its COPY lines name, not the
whole checkout (no bench/): its tests must collect there. A module-level import of something outside them in
tests/conftest.py broke the compose test once (bench.lib.tls_certs)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stage_copies() -> list[str]:
    text = (ROOT / "Dockerfile").read_text()
    stage = text.split("FROM runtime AS test", 1)[1].split("\nFROM ", 1)[0]
    return [m[1] for m in re.finditer(r"^COPY (?!--)(\S+) ", stage, re.M)]


def test_the_compose_tests_collect_in_the_test_image_tree(tmp_path):
    copies = stage_copies()
    assert "tests" in copies and "bench" not in copies
    for name in copies:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, tmp_path / name)
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             "tests/clients/test_compose.py", "tests/clients/test_compose_cluster.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
